"""Shop: search, product page, cart (UI and cart.json agree), checkout, pm clear."""

from __future__ import annotations

import json

from farm.sim.world.apps import shop_catalog as catalog
from tests.sim.apps_driver import Droid

PKG = "org.distrl.shop"
R = f"{PKG}:id/"


async def cart_json(d: Droid) -> dict[str, object]:
    via_run_as = await d.sh(f"run-as {PKG} cat files/cart.json")
    as_root = await d.sh(f"cat /data/data/{PKG}/files/cart.json")
    assert via_run_as == as_root
    data: dict[str, object] = json.loads(via_run_as)
    return data


async def open_product(d: Droid, query: str, name: str) -> None:
    await d.tap(resource_id=f"{R}search_box")
    await d.type(query)
    await d.key("KEYCODE_ENTER")
    assert d.focus() == (PKG, f"{PKG}.SearchResultsActivity")
    await d.tap(resource_id=f"{R}product_title", text=name)
    assert d.focus() == (PKG, f"{PKG}.ProductActivity")


async def test_search_add_to_cart_and_cart_page_agree() -> None:
    d = Droid()
    await d.tap(text="Shop", content_desc="Shop")
    assert d.focus() == (PKG, f"{PKG}.MainActivity")
    await open_product(d, "logitech mouse", "Logitech G Pro Wireless Mouse")
    assert d.get(resource_id=f"{R}product_price").text == "$129.99"
    await d.tap(resource_id=f"{R}add_to_cart")
    assert d.get(resource_id=f"{R}snackbar_text").text == "Added to cart (1 in cart)"
    assert d.get(resource_id=f"{R}cart_badge").text == "1"
    state = await cart_json(d)
    assert state["item_count"] == 1 and state["total"] == 129.99
    items = state["items"]
    assert isinstance(items, list)
    assert [(i["name"], i["quantity"], i["price"]) for i in items] == [
        ("Logitech G Pro Wireless Mouse", 1, 129.99)]

    await d.key("KEYCODE_BACK")
    await d.key("KEYCODE_BACK")
    await open_product(d, "headphones", "Sony WH-1000XM5 Headphones")
    await d.tap(resource_id=f"{R}add_to_cart")
    await d.tap(content_desc="Cart")
    assert d.focus() == (PKG, f"{PKG}.CartActivity")
    assert d.texts(f"{R}product_title") == ["Logitech G Pro Wireless Mouse",
                                            "Sony WH-1000XM5 Headphones"]
    assert d.get(resource_id=f"{R}cart_total").text == "Subtotal (2 items): $529.98"
    # + on the first row, then remove the second
    await d.tap(content_desc="Increase quantity")
    assert d.texts(f"{R}quantity") == ["2", "1"]
    state = await cart_json(d)
    assert state["total_cents"] == 2 * 12999 + 39999
    assert d.get(resource_id=f"{R}cart_total").text == "Subtotal (3 items): $659.97"
    removes = [e for e in d.elements() if e.resource_id == f"{R}remove"]
    x, y = removes[1].bounds.center
    await d.sh(f"input tap {x} {y}")
    state = await cart_json(d)
    assert state["item_count"] == 2 and state["total"] == 259.98
    assert d.get(resource_id=f"{R}cart_total").text == "Subtotal (2 items): $259.98"
    # checkout moves the cart into orders.json
    await d.tap(resource_id=f"{R}checkout")
    assert d.get(resource_id="android:id/alertTitle").text == "Order placed"
    await d.tap(resource_id="android:id/button1")
    assert (await cart_json(d))["items"] == []
    orders = json.loads(await d.sh(f"run-as {PKG} cat files/orders.json"))["orders"]
    assert [o["order_id"] for o in orders] == ["ORD-0001"]
    assert orders[0]["items"][0]["quantity"] == 2


async def test_categories_and_no_results() -> None:
    d = Droid()
    await d.launch(PKG)
    await d.tap(resource_id=f"{R}category", text="Books")
    assert d.get(resource_id=f"{R}results_count").text == "5 results for Books"
    await d.key("KEYCODE_BACK")
    await d.tap(resource_id=f"{R}search_box")
    await d.type("zzzz")
    await d.key("KEYCODE_ENTER")
    assert d.get(resource_id=f"{R}results_count").text == 'No results for "zzzz"'


async def test_cart_survives_force_stop_and_pm_clear_empties_it() -> None:
    d = Droid()
    await d.launch(PKG)
    await open_product(d, "kindle", "Kindle Paperwhite 16GB")
    await d.tap(resource_id=f"{R}buy_now")
    assert d.focus() == (PKG, f"{PKG}.CartActivity")
    await d.sh(f"am force-stop {PKG}")
    assert (await cart_json(d))["item_count"] == 1
    await d.launch(PKG)
    assert d.get(resource_id=f"{R}cart_badge").text == "1"
    assert await d.sh(f"pm clear {PKG}") == "Success\n"
    assert (await cart_json(d))["item_count"] == 0
    await d.launch(PKG)
    assert d.find(resource_id=f"{R}cart_badge") is None
    assert "package:org.distrl.shop" in await d.sh("pm list packages -3")


async def test_run_as_rules() -> None:
    d = Droid()
    assert (await d.sh(f"run-as {PKG} pwd")).strip() == f"/data/data/{PKG}"
    assert await d.sh(f"run-as {PKG} ls files") == "cart.json\norders.json\n"
    code, _, err = await d.sh_err("run-as com.android.chrome ls")
    assert (code, err) == (1, "run-as: package not debuggable: com.android.chrome\n")
    code, _, err = await d.sh_err("run-as com.nope ls")
    assert (code, err) == (1, "run-as: unknown package: com.nope\n")


async def test_small_screen_product_page() -> None:
    d = Droid("small")
    await d.sh("settings put secure ui_night_mode 2")
    await d.launch(PKG)
    await open_product(d, "nintendo", "Nintendo Switch OLED Model")
    add = await d.scroll_to(resource_id=f"{R}add_to_cart")
    await d.sh(f"input tap {add.bounds.center[0]} {add.bounds.center[1]}")
    assert (await cart_json(d))["items"] != []


def test_catalogue() -> None:
    assert len(catalog.PRODUCTS) == 40
    assert len({p.name for p in catalog.PRODUCTS}) == 40
    assert {p.category for p in catalog.PRODUCTS} == set(catalog.CATEGORIES)
    assert [p.name for p in catalog.search("sony headphones")] == ["Sony WH-1000XM5 Headphones"]
    assert catalog.money(123456) == "$1,234.56"
