"""Shop (org.distrl.shop): a web-shopping app with search, product pages, cart and checkout.

The cart and the orders are app data (``pm clear`` empties them, a force stop keeps them).
Every change is written to ``/data/data/org.distrl.shop/files/cart.json`` and
``orders.json``, readable with ``run-as org.distrl.shop cat files/cart.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from farm.sim.world import widgets as w
from farm.sim.world.apps import kit
from farm.sim.world.apps.base import Activity, App, Host, register
from farm.sim.world.apps.shop_catalog import (
    BY_ID,
    CATEGORIES,
    PRODUCTS,
    Product,
    in_category,
    money,
    search,
)
from farm.sim.world.views import Paint, View

PKG = "org.distrl.shop"
MAIN = f"{PKG}.MainActivity"
RESULTS = f"{PKG}.SearchResultsActivity"
PRODUCT = f"{PKG}.ProductActivity"
CART = f"{PKG}.CartActivity"
RID = f"{PKG}:id/"
FILES = f"/data/data/{PKG}/files"
CART_JSON = f"{FILES}/cart.json"
ORDERS_JSON = f"{FILES}/orders.json"

_CAT_COLORS = {"Electronics": "#1a73e8", "Computers": "#5e35b1", "Audio": "#d81b60",
               "Home & Kitchen": "#e37400", "Sports & Outdoors": "#188038", "Books": "#795548",
               "Clothing": "#00838f", "Toys & Games": "#c5221f"}


class ShopActivity(Activity):
    """Shared pieces: the toolbar with the cart button, product rows, the snackbar."""

    title = "Shop"

    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        assert isinstance(app, Shop)
        self.shop = app
        self.snack = ""

    def open_cart(self) -> None:
        self.snack = ""
        self.host.start(PKG, CART)

    def open_product(self, pid: str) -> Callable[[], None]:
        def do() -> None:
            self.snack = ""
            self.host.start(PKG, PRODUCT, {"id": pid})
        return do

    def bar(self, ctx: w.Ctx, title: str, up: bool = True, cart: bool = True) -> View:
        actions: list[kit.Action] = []
        if cart:
            actions.append(("cart", "Cart", f"{RID}cart", self.open_cart))
        tb = kit.toolbar(ctx, title, PKG, on_up=self.finish if up else None, actions=actions,
                         title_rid=f"{RID}toolbar_title")
        n = self.shop.count()
        if cart and n:
            b = tb.bounds
            s = ctx.dp(20)
            x1, y0 = ctx.width - ctx.dp(8), b[1] + ctx.dp(8)
            tb.add(View(cls=w.TEXT_VIEW, bounds=(x1 - s, y0, x1, y0 + s), text=str(n),
                        rid=f"{RID}cart_badge",
                        paint=Paint("button", color="on_primary", bg="#d93025", size=11,
                                    radius=10)))
        return tb

    def product_row(self, ctx: w.Ctx, p: Product) -> w.Row:
        h = ctx.dp(104)

        def build(y: int) -> View:
            row = View(cls=w.LINEAR, bounds=(0, y, ctx.width, y + h), rid=f"{RID}product_item",
                       clickable=True, focusable=True, on_click=self.open_product(p.id))
            m = ctx.dp(16)
            s = ctx.dp(72)
            row.add(View(cls=w.IMAGE_VIEW, bounds=(m, y + ctx.dp(16), m + s, y + ctx.dp(16) + s),
                         rid=f"{RID}product_image", desc=p.name,
                         paint=Paint("icon", icon="bag", size=40, color="on_icon_bg",
                                     bg=_CAT_COLORS[p.category])))
            x = m + s + ctx.dp(16)
            tw = ctx.width - x - m
            ty = y + ctx.dp(12)
            row.add(w.text(ctx, x, ty, tw, p.name, 16, rid=f"{RID}product_title"))
            ty += ctx.line(16)
            row.add(w.text(ctx, x, ty, tw, p.brand, 13, "on_surface_var",
                           rid=f"{RID}product_brand"))
            ty += ctx.line(13)
            row.add(w.text(ctx, x, ty, tw, f"{p.rating} out of 5 ({p.reviews:,})", 13,
                           "on_surface_var", rid=f"{RID}product_rating"))
            ty += ctx.line(13)
            row.add(w.text(ctx, x, ty, tw, p.price, 18, rid=f"{RID}product_price"))
            return row
        return (h, build)

    def finish_build(self, ctx: w.Ctx, root: View) -> View:
        if self.snack:
            root.add(kit.snackbar(ctx, self.snack, PKG))
        return root


class MainActivity(ShopActivity):
    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        self.query = kit.SelectAllField(hint="Search products")
        self.query.on_submit = self._search

    def _focus_search(self) -> None:
        self.query.selected = bool(self.query.text)  # a new search replaces the old query
        self.host.focus(self, self.query)

    def _search(self, text: str) -> None:
        self.host.focus(self, None)
        if text.strip():
            self.host.start(PKG, RESULTS, {"q": text.strip()})

    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        tb = self.bar(ctx, "Shop", up=False)
        root.add(tb)
        m = ctx.dp(16)
        y = tb.bounds[3] + ctx.dp(4)
        sh = ctx.dp(52)
        root.add(w.edit_text(ctx, (m, y, ctx.width - m, y + sh), self.query,
                             self.focus is self.query, rid=f"{RID}search_box",
                             on_focus=self._focus_search, size=16))
        top = y + sh + ctx.dp(8)
        rows: list[w.Row] = [kit.para(ctx, "Shop by category", 18, gap=8)]
        rows += self._chips(ctx)
        rows.append(kit.para(ctx, "Deals for you", 18, gap=4))
        rows += [self.product_row(ctx, p) for p in PRODUCTS[::5]]
        root.add(w.scroll_list(ctx, self.scroll, "home", (0, top, ctx.width, c[3]), rows,
                               rid=f"{RID}home_list", bottom_pad=ctx.dp(16)))
        return self.finish_build(ctx, root)

    def _chips(self, ctx: w.Ctx) -> list[w.Row]:
        m, gap = ctx.dp(16), ctx.dp(8)
        lines: list[list[str]] = [[]]
        x = m
        for cat in CATEGORIES:
            cw = ctx.text_w(cat, 14) + ctx.dp(32)
            if x + cw > ctx.width - m and lines[-1]:
                lines.append([])
                x = m
            lines[-1].append(cat)
            x += cw + gap
        rows: list[w.Row] = []
        for cats in lines:
            def build(y: int, cats: list[str] = cats) -> View:
                line = View(cls=w.LINEAR, bounds=(0, y, ctx.width, y + ctx.dp(40)))
                x = m
                for cat in cats:
                    ch = kit.chip(ctx, x, y, cat, f"{RID}category", self._category(cat))
                    line.add(ch)
                    x = ch.bounds[2] + gap
                return line
            rows.append((ctx.dp(40), build))
        rows.append(kit.spacer(ctx, 12))
        return rows

    def _category(self, cat: str) -> Callable[[], None]:
        return lambda: self.host.start(PKG, RESULTS, {"category": cat})


class ResultsActivity(ShopActivity):
    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        q, cat = self.args.get("q", ""), self.args.get("category", "")
        hits = in_category(cat) if cat else search(q)
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        tb = self.bar(ctx, cat or q)
        root.add(tb)
        label = cat if cat else f'"{q}"'
        count = (f"{len(hits)} result{'s' if len(hits) != 1 else ''} for {label}" if hits
                 else f"No results for {label}")
        rows: list[w.Row] = [kit.para(ctx, count, 14, color="on_surface_var",
                                      rid=f"{RID}results_count", gap=4)]
        rows += [self.product_row(ctx, p) for p in hits]
        root.add(w.scroll_list(ctx, self.scroll, "results", (0, tb.bounds[3], ctx.width, c[3]),
                               rows, rid=f"{RID}results_list", bottom_pad=ctx.dp(16)))
        return self.finish_build(ctx, root)


class ProductActivity(ShopActivity):
    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        p = BY_ID.get(self.args.get("id", ""), PRODUCTS[0])
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        tb = self.bar(ctx, "")
        root.add(tb)
        m = ctx.dp(16)
        ih = ctx.dp(200)
        rows: list[w.Row] = [
            (ih + ctx.dp(16), lambda y: View(
                cls=w.IMAGE_VIEW, bounds=(m, y, ctx.width - m, y + ih), desc=p.name,
                rid=f"{RID}product_image", paint=Paint("icon", icon="bag", size=96,
                                                        color="on_icon_bg",
                                                        bg=_CAT_COLORS[p.category]))),
            kit.para(ctx, p.name, 22, rid=f"{RID}product_title", gap=4),
            kit.para(ctx, f"Brand: {p.brand}", 14, color="primary", rid=f"{RID}product_brand",
                     gap=4),
            kit.para(ctx, f"{p.rating} out of 5 stars ({p.reviews:,} ratings)", 14,
                     color="on_surface_var", rid=f"{RID}product_rating", gap=8),
            kit.para(ctx, p.price, 28, rid=f"{RID}product_price", gap=4),
            kit.para(ctx, "In stock", 14, color="#188038", gap=12),
            (ctx.dp(60), lambda y: w.button(ctx, (m, y, ctx.width - m, y + ctx.dp(48)),
                                            "Add to cart", rid=f"{RID}add_to_cart", filled=True,
                                            on_click=lambda: self._add(p))),
            (ctx.dp(68), lambda y: w.button(ctx, (m, y, ctx.width - m, y + ctx.dp(48)),
                                            "Buy now", rid=f"{RID}buy_now",
                                            on_click=lambda: self._buy(p))),
            kit.para(ctx, "About this item", 18, gap=6),
            kit.para(ctx, p.description, 15, color="on_surface_var",
                     rid=f"{RID}product_description"),
            kit.para(ctx, f"Category: {p.category}", 14, color="on_surface_var"),
        ]
        root.add(w.scroll_list(ctx, self.scroll, "product", (0, tb.bounds[3], ctx.width, c[3]),
                               rows, rid=f"{RID}product_scroll", cls="android.widget.ScrollView",
                               bottom_pad=ctx.dp(72)))
        return self.finish_build(ctx, root)

    def _add(self, p: Product) -> None:
        self.shop.add(p.id)
        self.snack = f"Added to cart ({self.shop.cart[p.id]} in cart)"

    def _buy(self, p: Product) -> None:
        self.shop.add(p.id)
        self.open_cart()


class CartActivity(ShopActivity):
    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        tb = self.bar(ctx, "Cart", cart=False)
        root.add(tb)
        m = ctx.dp(16)
        if not self.shop.cart:
            root.add(w.text(ctx, m, tb.bounds[3] + ctx.dp(32), ctx.width - 2 * m,
                            "Your cart is empty", 20, align="center",
                            rid=f"{RID}empty_cart"))
            return self.finish_build(ctx, root)
        panel_h = ctx.dp(124)
        rows = [self._item(ctx, BY_ID[pid], qty) for pid, qty in self.shop.cart.items()]
        root.add(w.scroll_list(ctx, self.scroll, "cart", (0, tb.bounds[3], ctx.width,
                                                          c[3] - panel_h),
                               rows, rid=f"{RID}cart_list"))
        py = c[3] - panel_h
        panel = View(cls=w.LINEAR, bounds=(0, py, ctx.width, c[3]), rid=f"{RID}cart_summary",
                     paint=Paint("fill", bg="dialog"))
        n = self.shop.count()
        panel.add(w.text(ctx, m, py + ctx.dp(12), ctx.width - 2 * m,
                         f"Subtotal ({n} item{'s' if n != 1 else ''}): "
                         f"{money(self.shop.total_cents())}", 18, rid=f"{RID}cart_total"))
        by = py + ctx.dp(12) + ctx.line(18) + ctx.dp(12)
        panel.add(w.button(ctx, (m, by, ctx.width - m, by + ctx.dp(48)), "Proceed to checkout",
                           rid=f"{RID}checkout", filled=True, on_click=self._checkout))
        root.add(panel)
        return self.finish_build(ctx, root)

    def _item(self, ctx: w.Ctx, p: Product, qty: int) -> w.Row:
        h = ctx.dp(128)

        def build(y: int) -> View:
            row = View(cls=w.LINEAR, bounds=(0, y, ctx.width, y + h), rid=f"{RID}cart_item")
            m = ctx.dp(16)
            s = ctx.dp(64)
            row.add(View(cls=w.IMAGE_VIEW, bounds=(m, y + ctx.dp(12), m + s, y + ctx.dp(12) + s),
                         desc=p.name, paint=Paint("icon", icon="bag", size=36,
                                                  color="on_icon_bg",
                                                  bg=_CAT_COLORS[p.category])))
            x = m + s + ctx.dp(16)
            tw = ctx.width - x - m
            ty = y + ctx.dp(10)
            row.add(w.text(ctx, x, ty, tw, p.name, 16, rid=f"{RID}product_title"))
            ty += ctx.line(16)
            row.add(w.text(ctx, x, ty, tw, p.price, 16, rid=f"{RID}product_price"))
            by = y + h - ctx.dp(52)
            bs = ctx.dp(40)
            row.add(kit.icon_button(ctx, x, by, "remove", "Decrease quantity", f"{RID}qty_minus",
                                    lambda: self.shop.set_qty(p.id, qty - 1), size=40,
                                    bg="surface_var"))
            row.add(w.text(ctx, x + bs, by + (bs - ctx.line(18)) // 2, ctx.dp(40), str(qty), 18,
                           align="center", rid=f"{RID}quantity"))
            row.add(kit.icon_button(ctx, x + bs + ctx.dp(40), by, "add", "Increase quantity",
                                    f"{RID}qty_plus", lambda: self.shop.set_qty(p.id, qty + 1),
                                    size=40, bg="surface_var"))
            rw = ctx.text_w("Remove", 14) + ctx.dp(24)
            row.add(w.button(ctx, (ctx.width - m - rw, by, ctx.width - m, by + bs), "Remove",
                             rid=f"{RID}remove", on_click=lambda: self.shop.set_qty(p.id, 0)))
            row.add(kit.divider(ctx, y + h - 1, m, ctx.width - m))
            return row
        return (h, build)

    def _checkout(self) -> None:
        order = self.shop.checkout()
        if order:
            self.dialog_open = order

    def build_dialog(self, ctx: w.Ctx) -> View | None:
        if not self.dialog_open:
            return None
        order = self.dialog_open

        def body(x: int, y: int, width: int) -> tuple[list[View], int]:
            v = w.text(ctx, x, y, width, f"Your order {order} has been placed.", 16,
                       "on_surface_var", rid="android:id/message", lines=2)
            return [v], v.bounds[3] - v.bounds[1]

        def ok() -> None:
            self.dialog_open = ""
            self.finish()
        return w.dialog(ctx, "Order placed", body, [("OK", "android:id/button1", ok)],
                        package=PKG)


@register
class Shop(App):
    package = PKG
    label = "Shop"
    apk_path = "/data/app/~~V2hpdGVTaG9w==/org.distrl.shop-U2hvcEFwcA==/base.apk"
    system = False
    debuggable = True
    launcher_activity = MAIN
    icon = "bag"
    icon_color = "#e37400"
    activities: ClassVar[dict[str, type[Activity]]] = {
        MAIN: MainActivity, RESULTS: ResultsActivity, PRODUCT: ProductActivity,
        CART: CartActivity}

    def reset(self) -> None:
        self.cart: dict[str, int] = {}  # product id → quantity, in the order added
        self.orders: list[dict[str, object]] = []
        kit.remove(self.host.vfs, f"/data/data/{PKG}")
        self.save()

    # ── cart ─────────────────────────────────────────────────────────────────────────
    def add(self, pid: str) -> None:
        self.cart[pid] = self.cart.get(pid, 0) + 1
        self.save()

    def set_qty(self, pid: str, qty: int) -> None:
        if qty <= 0:
            self.cart.pop(pid, None)
        else:
            self.cart[pid] = qty
        self.save()

    def count(self) -> int:
        return sum(self.cart.values())

    def total_cents(self) -> int:
        return sum(BY_ID[pid].price_cents * q for pid, q in self.cart.items())

    def checkout(self) -> str:
        if not self.cart:
            return ""
        order_id = f"ORD-{len(self.orders) + 1:04d}"
        state = self.cart_state()
        self.orders.append({"order_id": order_id, **state})
        self.cart = {}
        self.save()
        self.host.post_notification(PKG, "Order placed",
                                    f"{order_id} · {state['item_count']} item(s), "
                                    f"${state['total']:.2f}", tag=order_id)
        return order_id

    def cart_state(self) -> dict[str, object]:
        items = []
        for pid, q in self.cart.items():
            p = BY_ID[pid]
            items.append({"id": pid, "name": p.name, "brand": p.brand, "category": p.category,
                          "price": p.price_cents / 100, "price_cents": p.price_cents,
                          "quantity": q, "subtotal": p.price_cents * q / 100})
        total = self.total_cents()
        return {"items": items, "item_count": self.count(), "total": total / 100,
                "total_cents": total}

    def save(self) -> None:
        now = self.host.wall_time()
        kit.write_json(self.host.vfs, CART_JSON, self.cart_state(), now)
        kit.write_json(self.host.vfs, ORDERS_JSON, {"orders": self.orders}, now)
