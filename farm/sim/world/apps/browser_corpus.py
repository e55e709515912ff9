"""The offline web of the simulated Chrome: a fixed corpus of articles and a tiny search.

Deterministic by construction (no randomness, no clock): the same query always gives
the same ranked results, so tasks can name a result by its title or URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Article:
    url: str
    heading: str  # the page's h1
    site: str  # shown above the result title and used for the document title
    topic: str
    keywords: str  # extra search terms
    paragraphs: tuple[str, ...]

    @property
    def title(self) -> str:
        """The document title (tab title, WebView text)."""
        return f"{self.heading} - {self.site}"

    @property
    def snippet(self) -> str:
        return self.paragraphs[0]


WIKI = "https://en.wikipedia.org/wiki/"
NEWS = "https://www.example-news.com/"
RECIPES = "https://www.example-recipes.com/recipes/"
TRAVEL = "https://www.example-travel.com/guides/"


def _a(url: str, heading: str, site: str, topic: str, keywords: str, *paras: str) -> Article:
    return Article(url, heading, site, topic, keywords, paras)


def _wiki(slug: str, topic: str, keywords: str, *paras: str) -> Article:
    return _a(WIKI + slug, slug.replace("_", " "), "Wikipedia", topic, keywords, *paras)


ARTICLES: tuple[Article, ...] = (
    # ── weather ───────────────────────────────────────────────────────────────────────
    _a(NEWS + "weather/london-forecast", "London weather: cloudy with light rain", "Example News",
       "weather", "london uk england forecast rain temperature today tomorrow",
       "London will stay cloudy today with light rain from mid-afternoon. The high is 14°C "
       "and the low 8°C, with a south-westerly breeze of 20 km/h.",
       "Tomorrow brings sunny spells and a dry afternoon, with a high of 16°C. The weekend "
       "looks unsettled again, with showers on Saturday and a high of 13°C on Sunday.",
       "Humidity is around 82 percent and the UV index is low (2)."),
    _a(NEWS + "weather/paris-forecast", "Paris weather: sunny and warm", "Example News",
       "weather", "paris france forecast sunny temperature today tomorrow",
       "Paris enjoys a sunny day with a high of 24°C and a low of 13°C. Winds are light, "
       "from the north-east at 10 km/h.",
       "Tomorrow stays dry and warmer, with a high of 26°C. Thunderstorms are possible on "
       "Thursday evening.",
       "The UV index is high (7): sunscreen is recommended at midday."),
    _a(NEWS + "weather/new-york-forecast", "New York City weather: showers clearing",
       "Example News", "weather", "new york nyc usa forecast rain showers temperature",
       "Morning showers in New York City clear by noon. The high is 68°F (20°C) and the low "
       "55°F (13°C).",
       "Tomorrow is mostly sunny with a high of 72°F. Rain returns on Friday with a 60 "
       "percent chance of precipitation.",
       "Commuters should expect wet roads until late morning."),
    _a(NEWS + "weather/tokyo-forecast", "Tokyo weather: humid with afternoon storms",
       "Example News", "weather", "tokyo japan forecast storm humid temperature rainy season",
       "Tokyo is hot and humid today with a high of 31°C and a low of 24°C. Thunderstorms "
       "may develop in the afternoon.",
       "The rainy season continues through the week; tomorrow has a 70 percent chance of "
       "rain and a high of 29°C.",
       "Heat-stroke alerts are in place for the Kanto region."),
    _a(NEWS + "weather/sydney-forecast", "Sydney weather: cool and windy", "Example News",
       "weather", "sydney australia forecast wind cool temperature winter",
       "Sydney has a cool, windy day with a high of 17°C and a low of 9°C. Westerly gusts "
       "reach 50 km/h in the afternoon.",
       "Tomorrow is calmer and sunny with a high of 19°C.",
       "Surf conditions are rough along the eastern beaches."),
    # ── recipes ───────────────────────────────────────────────────────────────────────
    _a(RECIPES + "classic-pancakes", "Classic fluffy pancakes", "Example Recipes", "recipes",
       "pancake breakfast recipe flour eggs milk easy",
       "These fluffy pancakes take 20 minutes and serve 4. You need 200 g flour, 2 eggs, "
       "300 ml milk, 1 tbsp sugar, 2 tsp baking powder and a pinch of salt.",
       "Whisk the dry ingredients, then add the eggs and milk and stir until just combined. "
       "Cook ladlefuls in a hot buttered pan for 2 minutes per side.",
       "Serve with maple syrup and berries."),
    _a(RECIPES + "spaghetti-carbonara", "Spaghetti carbonara", "Example Recipes", "recipes",
       "pasta italian recipe dinner eggs pecorino guanciale",
       "Authentic carbonara needs only spaghetti, guanciale, eggs, pecorino romano and black "
       "pepper. It serves 2 and takes 25 minutes.",
       "Crisp the guanciale, toss it with the hot pasta off the heat, then stir in 3 yolks "
       "beaten with 50 g grated pecorino until creamy. Never add cream.",
       "Finish with plenty of freshly ground pepper."),
    _a(RECIPES + "chicken-curry", "Easy chicken curry", "Example Recipes", "recipes",
       "curry indian recipe dinner chicken spicy rice",
       "A weeknight chicken curry ready in 40 minutes, serving 4. It uses 600 g chicken "
       "thighs, 2 onions, garlic, ginger, a tin of tomatoes and 2 tbsp curry powder.",
       "Fry the onions until golden, add the spices, then the chicken and tomatoes, and "
       "simmer for 25 minutes. Stir in a splash of cream or yoghurt at the end.",
       "Serve with basmati rice and naan."),
    _a(RECIPES + "banana-bread", "Moist banana bread", "Example Recipes", "recipes",
       "banana bread baking cake recipe dessert",
       "Use 3 very ripe bananas, 75 g melted butter, 150 g sugar, 1 egg, 1 tsp baking soda "
       "and 190 g flour. Bake at 175°C for 60 minutes.",
       "Mash the bananas, mix in the butter, sugar and egg, then fold in the flour and soda. "
       "Pour into a loaf tin and bake until a skewer comes out clean.",
       "It keeps for 3 days wrapped at room temperature."),
    _a(RECIPES + "greek-salad", "Greek salad", "Example Recipes", "recipes",
       "salad greek vegetarian recipe feta olives tomato cucumber lunch",
       "A fresh Greek salad for 2 in 10 minutes: tomatoes, cucumber, red onion, green "
       "pepper, kalamata olives and a block of feta.",
       "Dress with olive oil, red wine vinegar and dried oregano. Do not toss the feta; lay "
       "it on top.",
       "Serve with crusty bread."),
    _a(RECIPES + "chocolate-chip-cookies", "Chocolate chip cookies", "Example Recipes",
       "recipes", "cookies baking dessert chocolate recipe",
       "Makes 24 cookies in 30 minutes. Cream 115 g butter with 100 g brown sugar and 50 g "
       "white sugar, beat in 1 egg and vanilla, then add 180 g flour and 150 g chocolate chips.",
       "Bake spoonfuls at 180°C for 10 to 12 minutes, until golden at the edges.",
       "Let them cool on the tray for 5 minutes."),
    # ── sports ────────────────────────────────────────────────────────────────────────
    _a(NEWS + "sports/champions-league-final", "Champions League final ends in penalty drama",
       "Example News", "sports", "football soccer champions league final penalties",
       "The Champions League final finished 1-1 after extra time, and the Blues won the "
       "penalty shoot-out 4-3 in front of 70,000 fans.",
       "Goalkeeper Marco Rossi saved two penalties and was named man of the match.",
       "It is the club's third European title."),
    _a(NEWS + "sports/nba-finals-game-7", "NBA Finals: Game 7 goes to overtime", "Example News",
       "sports", "basketball nba finals game 7 overtime championship",
       "The NBA Finals went the distance as the Hawks beat the Suns 112-108 in overtime of "
       "Game 7.",
       "Point guard Jamal Carter scored 38 points, including the go-ahead three with 40 "
       "seconds left.",
       "It is the franchise's first championship in 40 years."),
    _a(NEWS + "sports/wimbledon-womens-final", "Wimbledon: first-time champion crowned",
       "Example News", "sports", "tennis wimbledon final women grand slam",
       "An unseeded 21-year-old won the Wimbledon women's final 6-4, 3-6, 7-5 to claim her "
       "first Grand Slam title.",
       "She saved three break points in the final game before sealing the win with an ace.",
       "The men's final is on Sunday at 2 pm."),
    _a(NEWS + "sports/tour-de-france-stage-12", "Tour de France stage 12: breakaway wins in the "
       "Alps", "Example News", "sports", "cycling tour de france stage alps yellow jersey",
       "A four-rider breakaway held off the peloton on the 180 km stage 12 to the Alpine "
       "summit finish.",
       "The yellow jersey stays with the defending champion, who leads by 1 minute 12 seconds.",
       "Stage 13 is a flat 200 km run suited to the sprinters."),
    _wiki("Olympic_Games", "sports", "olympics summer winter ioc athletes sport history",
          "The modern Olympic Games are the leading international sporting events, with "
          "summer and winter editions held every four years.",
          "They were revived in 1896 in Athens by Pierre de Coubertin, who founded the "
          "International Olympic Committee in 1894.",
          "The 2024 Summer Olympics were held in Paris."),
    _wiki("Marathon", "sports", "running race 42 km athletics long distance",
          "The marathon is a long-distance foot race over 42.195 kilometres (26 miles "
          "385 yards).",
          "It commemorates the run of the Greek messenger Pheidippides from Marathon to Athens.",
          "The men's world record is under 2 hours 1 minute."),
    # ── history ───────────────────────────────────────────────────────────────────────
    _wiki("Eiffel_Tower", "history", "paris france landmark tower iron gustave eiffel",
          "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, "
          "France. It is named after the engineer Gustave Eiffel.",
          "It was built from 1887 to 1889 for the 1889 World's Fair and is 330 metres tall.",
          "It is one of the most visited paid monuments in the world."),
    _wiki("Roman_Empire", "history", "rome ancient empire augustus caesar",
          "The Roman Empire was the state ruled by the Romans following Octavian's assumption "
          "of sole rule as Augustus in 27 BC.",
          "At its height it controlled the Mediterranean and much of Europe, with a "
          "population of perhaps 60 million.",
          "The Western Roman Empire fell in AD 476."),
    _wiki("Apollo_11", "history", "moon landing nasa armstrong aldrin 1969 space",
          "Apollo 11 was the American spaceflight that first landed humans on the Moon, on "
          "July 20, 1969.",
          "Neil Armstrong and Buzz Aldrin walked on the surface while Michael Collins orbited "
          "in the command module Columbia.",
          "Armstrong's first words were: one small step for man, one giant leap for mankind."),
    _wiki("Great_Wall_of_China", "history", "china wall ancient ming dynasty landmark",
          "The Great Wall of China is a series of fortifications built across the historical "
          "northern borders of ancient Chinese states.",
          "Most of the existing wall dates from the Ming dynasty (1368-1644). With all its "
          "branches it measures about 21,196 km.",
          "It is a UNESCO World Heritage Site."),
    _wiki("Printing_press", "history", "gutenberg printing invention books 1440",
          "A printing press is a mechanical device for applying pressure to an inked surface "
          "resting on a print medium.",
          "Johannes Gutenberg developed the movable-type printing press around 1440 in Mainz.",
          "It made books cheaper and helped spread the Renaissance and the Reformation."),
    _wiki("Titanic", "history", "ship sinking 1912 iceberg atlantic",
          "RMS Titanic was a British ocean liner that sank in the North Atlantic on "
          "15 April 1912 after striking an iceberg on her maiden voyage.",
          "More than 1,500 of the estimated 2,224 passengers and crew died.",
          "The wreck was found in 1985 at a depth of about 3,800 metres."),
    # ── technology ────────────────────────────────────────────────────────────────────
    _wiki("Android_(operating_system)", "tech", "android google mobile os smartphone linux",
          "Android is a mobile operating system based on a modified Linux kernel, designed "
          "primarily for touchscreen devices such as smartphones and tablets.",
          "It is developed by a consortium known as the Open Handset Alliance and sponsored "
          "by Google. The first Android phone was released in 2008.",
          "Android is the most widely used operating system in the world."),
    _wiki("Python_(programming_language)", "tech", "python programming language guido code",
          "Python is a high-level, general-purpose programming language whose design "
          "emphasizes code readability with significant indentation.",
          "It was created by Guido van Rossum and first released in 1991.",
          "Python is widely used in data science and machine learning."),
    _wiki("Reinforcement_learning", "tech", "machine learning ai agent reward policy rl",
          "Reinforcement learning is an area of machine learning concerned with how an agent "
          "should take actions in an environment to maximize a cumulative reward.",
          "Unlike supervised learning it does not need labelled input and output pairs.",
          "Well-known examples include AlphaGo and agents that play Atari games."),
    _a(NEWS + "tech/new-pixel-phone-review", "Review: the new Pixel phone's camera impresses",
       "Example News", "tech", "pixel phone review camera google smartphone battery",
       "The new Pixel has the best camera we have tested this year, with excellent low-light "
       "photos and a 5x telephoto lens.",
       "Battery life is solid at about a day and a half. The phone starts at $799.",
       "Our verdict: 4.5 out of 5."),
    _a(NEWS + "tech/electric-cars-sales", "Electric car sales hit a record", "Example News",
       "tech", "electric cars ev sales battery charging",
       "Electric cars made up 18 percent of new car sales worldwide last year, a record.",
       "Falling battery prices and more charging stations are driving the growth.",
       "Analysts expect the share to pass 25 percent within three years."),
    _wiki("World_Wide_Web", "tech", "web internet tim berners-lee www http browser",
          "The World Wide Web is an information system that lets documents and other web "
          "resources be accessed over the Internet.",
          "It was invented by Tim Berners-Lee at CERN in 1989.",
          "Web pages are written in HTML and accessed with a web browser."),
    # ── travel ────────────────────────────────────────────────────────────────────────
    _a(TRAVEL + "paris-in-3-days", "Paris in 3 days: the perfect itinerary", "Example Travel",
       "travel", "paris france travel itinerary louvre eiffel museum trip",
       "Day 1: the Eiffel Tower, a Seine cruise and dinner in Saint-Germain. Day 2: the "
       "Louvre in the morning and Montmartre in the afternoon.",
       "Day 3: the Musee d'Orsay and the Marais. Buy museum tickets online to skip the queues.",
       "The best time to visit is April to June."),
    _a(TRAVEL + "tokyo-first-timers", "Tokyo for first-timers", "Example Travel", "travel",
       "tokyo japan travel guide shibuya temple sushi trip",
       "Start in Shibuya and Harajuku, then visit Senso-ji temple in Asakusa. A Suica card "
       "makes trains easy.",
       "Eat sushi at Tsukiji outer market and see the city from the Tokyo Skytree.",
       "Spring cherry-blossom season (late March) is the busiest time."),
    _a(TRAVEL + "new-york-on-a-budget", "New York on a budget", "Example Travel", "travel",
       "new york nyc travel budget cheap free trip",
       "Ride the free Staten Island Ferry for views of the Statue of Liberty and walk the "
       "High Line.",
       "Many museums have pay-what-you-wish hours. A 7-day unlimited MetroCard costs $34.",
       "Stay in Queens or Brooklyn for cheaper hotels."),
    _a(TRAVEL + "iceland-ring-road", "Driving Iceland's Ring Road", "Example Travel", "travel",
       "iceland road trip drive waterfalls glacier travel",
       "The Ring Road (Route 1) circles Iceland in about 1,322 km. Allow at least 7 days.",
       "Highlights include Seljalandsfoss, the black-sand beach at Vik and the Jokulsarlon "
       "glacier lagoon.",
       "Summer brings the midnight sun; winter brings the northern lights."),
    _a(TRAVEL + "rome-travel-tips", "Rome travel tips", "Example Travel", "travel",
       "rome italy travel colosseum vatican trip tips",
       "Book Colosseum and Vatican Museums tickets in advance. The Vatican is closed on "
       "Sundays except the last Sunday of the month.",
       "Tap water from the city's drinking fountains is safe and free.",
       "Avoid restaurants with photo menus near the big sights."),
    _a(TRAVEL + "packing-list", "The ultimate packing list", "Example Travel", "travel",
       "packing list travel luggage checklist",
       "Pack a universal adapter, a power bank, copies of your passport and a reusable "
       "water bottle.",
       "Roll clothes instead of folding them to save space.",
       "Keep medication in your carry-on."),
    # ── science and health ────────────────────────────────────────────────────────────
    _wiki("Photosynthesis", "science", "plants light energy chlorophyll biology oxygen",
          "Photosynthesis is the process plants, algae and some bacteria use to turn light "
          "energy into chemical energy.",
          "It takes in carbon dioxide and water and releases oxygen.",
          "It happens in the chloroplasts, which contain the green pigment chlorophyll."),
    _wiki("Mars", "science", "planet red solar system nasa rover",
          "Mars is the fourth planet from the Sun. Its reddish colour comes from iron oxide "
          "on its surface.",
          "It has two small moons, Phobos and Deimos, and the tallest volcano in the solar "
          "system, Olympus Mons.",
          "A day on Mars lasts 24 hours 37 minutes."),
    _a(NEWS + "health/sleep-study", "Study: adults need 7 to 9 hours of sleep", "Example News",
       "health", "sleep health study hours adults",
       "A large study confirms that adults who sleep 7 to 9 hours a night have the lowest "
       "risk of heart disease.",
       "Keeping a regular bedtime matters as much as the total hours.",
       "Screens should be switched off an hour before bed."),
    _wiki("Coffee", "science", "coffee drink caffeine beans health",
          "Coffee is a beverage brewed from roasted coffee beans. It contains caffeine, a "
          "stimulant.",
          "The two most common species are arabica and robusta.",
          "Brazil is the largest producer of coffee in the world."),
    _wiki("Honey_bee", "science", "bee insect honey pollination hive",
          "A honey bee is a eusocial flying insect of the genus Apis, known for building "
          "colonies and making honey.",
          "A colony has one queen, thousands of worker bees and, in summer, drones.",
          "Bees pollinate about a third of the food crops we eat."),
)

BY_URL: dict[str, Article] = {a.url: a for a in ARTICLES}

_WORD = re.compile(r"[a-z0-9]+")


def tokens(s: str) -> list[str]:
    return _WORD.findall(s.lower().replace("'", ""))


def search(query: str, limit: int = 10) -> list[Article]:
    """Articles ranked by term matches: heading ×3, keywords ×2, text ×1 (stable ties)."""
    terms = [t for t in tokens(query) if t not in _STOP]
    if not terms:
        return []
    scored: list[tuple[int, int, Article]] = []
    for i, a in enumerate(ARTICLES):
        head, keys = set(tokens(a.heading)), set(tokens(a.keywords))
        body = set(tokens(" ".join(a.paragraphs)))
        score = 0
        hits = 0
        for t in terms:
            s = 3 * (t in head) + 2 * (t in keys) + (t in body)
            score += s
            hits += s > 0
        if hits:
            scored.append((-hits * 100 - score, i, a))
    scored.sort(key=lambda x: (x[0], x[1]))
    return [a for _, _, a in scored[:limit]]


_STOP = {"the", "a", "an", "of", "in", "on", "for", "to", "and", "is", "how", "what", "with",
         "at", "by", "me", "my", "show", "find"}


def lookup(url: str) -> Article | None:
    """The article at ``url``, tolerating http://, a missing www., a trailing slash and a
    fragment or query string (the corpus's static pages ignore both)."""
    u = url.strip().partition("#")[0].partition("?")[0]
    if u.startswith("http://"):
        u = "https://" + u[len("http://"):]
    if not u.startswith("https://"):
        u = "https://" + u
    u = u.rstrip("/")
    for cand in (u, u.replace("https://", "https://www.", 1),
                 u.replace("https://www.", "https://", 1)):
        if cand in BY_URL:
            return BY_URL[cand]
    return None
