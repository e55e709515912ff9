"""The Shop app's fixed catalogue: 40 products in 8 categories (deterministic)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Product:
    id: str
    name: str
    brand: str
    price_cents: int
    category: str
    rating: float
    reviews: int
    description: str

    @property
    def price(self) -> str:
        return money(self.price_cents)


def money(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


CATEGORIES = ("Electronics", "Computers", "Audio", "Home & Kitchen", "Sports & Outdoors",
              "Books", "Clothing", "Toys & Games")

_RAW: tuple[tuple[str, str, int, str, float, int, str], ...] = (
    # name, brand, price (cents), category, rating, reviews, description
    ("Apple iPhone 15 128GB", "Apple", 79900, "Electronics", 4.7, 5821,
     "6.1-inch Super Retina XDR display, A16 Bionic chip, 48MP main camera, USB-C."),
    ("Samsung Galaxy S24 256GB", "Samsung", 85999, "Electronics", 4.6, 3310,
     "6.2-inch Dynamic AMOLED 2X, Snapdragon 8 Gen 3, Galaxy AI, 4000 mAh battery."),
    ("Google Pixel 8 128GB", "Google", 69900, "Electronics", 4.5, 2144,
     "Google Tensor G3, 50MP camera with Magic Eraser, 7 years of OS updates."),
    ("Kindle Paperwhite 16GB", "Amazon", 14999, "Electronics", 4.7, 12890,
     "6.8-inch glare-free display, adjustable warm light, weeks of battery life."),
    ("Anker 737 Power Bank 24000mAh", "Anker", 10999, "Electronics", 4.6, 4102,
     "140W output, charges a laptop and phone at once, smart digital display."),
    ("Logitech G Pro Wireless Mouse", "Logitech", 12999, "Computers", 4.7, 6733,
     "Ultra-lightweight 80 g gaming mouse, HERO 25K sensor, LIGHTSPEED wireless."),
    ("Logitech MX Keys Keyboard", "Logitech", 9999, "Computers", 4.7, 8120,
     "Backlit wireless keyboard, spherically-dished keys, pairs with 3 devices."),
    ("Apple MacBook Air 13-inch M3", "Apple", 109900, "Computers", 4.8, 2250,
     "M3 chip, 8GB unified memory, 256GB SSD, 18 hours of battery life."),
    ("Dell 27 Monitor S2721QS 4K", "Dell", 27999, "Computers", 4.5, 3905,
     "27-inch 4K UHD IPS monitor, AMD FreeSync, built-in speakers, HDMI and DisplayPort."),
    ("SanDisk 1TB Extreme Portable SSD", "SanDisk", 8999, "Computers", 4.7, 15012,
     "Up to 1050 MB/s read, IP65 water and dust resistance, USB-C."),
    ("Sony WH-1000XM5 Headphones", "Sony", 39999, "Audio", 4.6, 9876,
     "Industry-leading noise cancelling wireless headphones, 30-hour battery."),
    ("Apple AirPods Pro (2nd generation)", "Apple", 24900, "Audio", 4.7, 20145,
     "Active noise cancellation, adaptive transparency, MagSafe USB-C charging case."),
    ("Bose QuietComfort Earbuds II", "Bose", 27900, "Audio", 4.4, 3567,
     "Personalised noise cancelling earbuds with CustomTune sound."),
    ("JBL Flip 6 Bluetooth Speaker", "JBL", 12995, "Audio", 4.8, 11230,
     "Portable waterproof speaker, bold JBL Pro Sound, 12 hours of playtime."),
    ("Sonos Era 100 Smart Speaker", "Sonos", 24900, "Audio", 4.5, 1420,
     "Stereo sound, voice control, Bluetooth and Wi-Fi, Trueplay tuning."),
    ("Instant Pot Duo 7-in-1 6 Quart", "Instant Pot", 8999, "Home & Kitchen", 4.7, 150233,
     "Pressure cooker, slow cooker, rice cooker, steamer, saute, yogurt maker and warmer."),
    ("Ninja AF101 Air Fryer 4 Quart", "Ninja", 9999, "Home & Kitchen", 4.8, 42311,
     "Air fry, roast, reheat and dehydrate with little to no oil."),
    ("Keurig K-Mini Coffee Maker", "Keurig", 7999, "Home & Kitchen", 4.4, 60120,
     "Single-serve K-Cup pod coffee brewer, fits anywhere, 6 to 12 oz cups."),
    ("Dyson V8 Cordless Vacuum", "Dyson", 34999, "Home & Kitchen", 4.5, 18440,
     "Up to 40 minutes of run time, whole-machine filtration, converts to handheld."),
    ("Lodge 10.25 Inch Cast Iron Skillet", "Lodge", 1990, "Home & Kitchen", 4.7, 98001,
     "Pre-seasoned cast iron pan for the oven, stove, grill or campfire."),
    ("Yeti Rambler 20 oz Tumbler", "Yeti", 3500, "Sports & Outdoors", 4.8, 31220,
     "Double-wall vacuum insulated stainless steel tumbler with MagSlider lid."),
    ("Coleman Sundome 4-Person Tent", "Coleman", 8999, "Sports & Outdoors", 4.6, 40551,
     "Weatherproof dome tent, sets up in 10 minutes, fits a queen-size airbed."),
    ("Hydro Flask 32 oz Water Bottle", "Hydro Flask", 4495, "Sports & Outdoors", 4.8, 27004,
     "Wide mouth insulated bottle, keeps drinks cold for 24 hours."),
    ("Manduka PRO Yoga Mat 6mm", "Manduka", 13000, "Sports & Outdoors", 4.7, 5102,
     "High-density cushioning, non-slip closed-cell surface, lifetime guarantee."),
    ("Wilson Evolution Basketball", "Wilson", 7499, "Sports & Outdoors", 4.8, 14300,
     "Official size 29.5-inch indoor game basketball with cushion core."),
    ("Atomic Habits by James Clear", "Avery", 1199, "Books", 4.8, 120334,
     "An easy and proven way to build good habits and break bad ones. Hardcover."),
    ("The Hobbit by J.R.R. Tolkien", "Mariner Books", 999, "Books", 4.8, 68200,
     "The classic fantasy adventure of Bilbo Baggins. Paperback."),
    ("Dune by Frank Herbert", "Ace", 1099, "Books", 4.7, 81455,
     "The science fiction masterpiece set on the desert planet Arrakis. Paperback."),
    ("Python Crash Course, 3rd Edition", "No Starch Press", 3599, "Books", 4.7, 9870,
     "A hands-on, project-based introduction to programming by Eric Matthes."),
    ("The Very Hungry Caterpillar", "World of Eric Carle", 699, "Books", 4.9, 45012,
     "Eric Carle's classic picture book. Board book."),
    ("Levi's 501 Original Fit Jeans", "Levi's", 6950, "Clothing", 4.5, 38002,
     "Straight leg button-fly jeans in 100% cotton denim."),
    ("Nike Air Force 1 '07 Sneakers", "Nike", 11500, "Clothing", 4.7, 22150,
     "Classic white leather basketball-style sneakers."),
    ("Hanes Men's Crew T-Shirt 6-Pack", "Hanes", 2400, "Clothing", 4.5, 103220,
     "Tagless cotton crew-neck T-shirts, assorted colours."),
    ("The North Face Resolve Rain Jacket", "The North Face", 9000, "Clothing", 4.6, 8840,
     "Waterproof, breathable, packable rain jacket with adjustable hood."),
    ("Carhartt Knit Cuffed Beanie", "Carhartt", 1999, "Clothing", 4.8, 91300,
     "Rib-knit acrylic watch hat with Carhartt patch."),
    ("LEGO Classic Medium Creative Brick Box", "LEGO", 3499, "Toys & Games", 4.8, 25120,
     "484 pieces in 35 colours for open-ended building, ages 4 and up."),
    ("Monopoly Classic Board Game", "Hasbro", 1997, "Toys & Games", 4.6, 30111,
     "The fast-dealing property trading game for 2 to 6 players."),
    ("Rubik's Cube 3x3", "Rubik's", 1099, "Toys & Games", 4.6, 42020,
     "The original 3x3 colour-matching puzzle."),
    ("Nintendo Switch OLED Model", "Nintendo", 34999, "Toys & Games", 4.8, 36500,
     "7-inch OLED screen, 64GB storage, enhanced audio, wide adjustable stand."),
    ("UNO Card Game", "Mattel", 599, "Toys & Games", 4.8, 61200,
     "The classic card-matching game for 2 to 10 players, ages 7 and up."),
)

PRODUCTS: tuple[Product, ...] = tuple(
    Product(f"P{i + 1:03d}", *row) for i, row in enumerate(_RAW))
BY_ID: dict[str, Product] = {p.id: p for p in PRODUCTS}

_WORD = re.compile(r"[a-z0-9]+")


def _tokens(s: str) -> list[str]:
    return _WORD.findall(s.lower().replace("'", ""))


def search(query: str) -> list[Product]:
    """Products whose name, brand or category contain every query word (catalogue order);
    when none do, those matching any word, most matches first."""
    terms = _tokens(query)
    if not terms:
        return []
    scored: list[tuple[int, int, Product]] = []
    for i, p in enumerate(PRODUCTS):
        words = set(_tokens(f"{p.name} {p.brand} {p.category}"))
        prefix = [any(w.startswith(t) for w in words) for t in terms]
        n = sum(prefix)
        if n:
            scored.append((-n, i, p))
    if not scored:
        return []
    best = -min(s[0] for s in scored)
    if best == len(terms):
        scored = [s for s in scored if -s[0] == best]
    scored.sort(key=lambda s: (s[0], s[1]))
    return [p for _, _, p in scored]


def in_category(category: str) -> list[Product]:
    return [p for p in PRODUCTS if p.category == category]
