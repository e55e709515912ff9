"""Pillow renderer: paints the finalized view tree, window by window, into one RGBA frame.

Speed matters (a VLM observes every step): the frame is drawn into one persistent
bytearray shared with a Pillow image (no per-frame allocation), text comes from a cache
of FreeType masks, icons and switch/slider parts from a sprite cache, so steady-state
frames cost a few ms of pastes. Nodes partly scrolled out of their list are drawn into a
scratch image and the visible part pasted, which is how clipping is done.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Hashable
from functools import lru_cache
from typing import Any

from PIL import Image, ImageDraw

from farm.sim.world import fonts, icons, keyboard
from farm.sim.world.views import Rect, View, contains

RGBA = tuple[int, int, int, int]

LIGHT: dict[str, RGBA] = {
    "bg": (247, 249, 255, 255), "on_surface": (26, 28, 32, 255),
    "on_surface_var": (67, 71, 78, 255), "primary": (11, 87, 208, 255),
    "on_primary": (255, 255, 255, 255), "surface_var": (224, 226, 236, 255),
    "outline": (116, 119, 127, 255), "disabled": (160, 162, 170, 255),
    "dialog": (236, 238, 248, 255), "search_bg": (229, 233, 245, 255),
    "divider": (218, 221, 230, 255), "on_icon_bg": (255, 255, 255, 255),
    "on_wallpaper": (255, 255, 255, 255), "drawer": (241, 243, 252, 255),
    "kb_bg": (233, 236, 242, 255), "kb_key": (255, 255, 255, 255),
    "kb_fn": (205, 211, 224, 255), "kb_text": (31, 31, 35, 255),
    "nav_bg": (247, 249, 255, 255),
}
DARK: dict[str, RGBA] = {
    "bg": (17, 19, 24, 255), "on_surface": (226, 226, 233, 255),
    "on_surface_var": (196, 198, 208, 255), "primary": (171, 199, 255, 255),
    "on_primary": (0, 47, 101, 255), "surface_var": (67, 71, 78, 255),
    "outline": (142, 144, 153, 255), "disabled": (110, 112, 120, 255),
    "dialog": (33, 36, 43, 255), "search_bg": (40, 43, 51, 255),
    "divider": (52, 55, 63, 255), "on_icon_bg": (255, 255, 255, 255),
    "on_wallpaper": (255, 255, 255, 255), "drawer": (26, 28, 34, 255),
    "kb_bg": (32, 33, 36, 255), "kb_key": (60, 64, 67, 255),
    "kb_fn": (45, 48, 52, 255), "kb_text": (232, 234, 237, 255),
    "nav_bg": (17, 19, 24, 255),
}

_BLACK: RGBA = (0, 0, 0, 255)


def hex_rgba(s: str) -> RGBA:
    s = s.lstrip("#")
    return (int(s[0:2], 16), int(s[2:4], 16), int(s[4:6], 16), 255)


class Renderer:
    def __init__(self, width: int, height: int, density: int) -> None:
        self.width, self.height, self.density = width, height, density
        self._buf = bytearray(width * height * 4)
        img = Image.frombuffer("RGBA", (width, height), self._buf, "raw", "RGBA", 0, 1)
        # frombuffer maps our bytearray read-only; we own it, so draw straight into it
        img.readonly = 0
        self.img = img
        self.draw = ImageDraw.Draw(img)
        self.masks = fonts.MaskCache()
        self.theme = LIGHT
        self.dark = False

    # ── units and colours ────────────────────────────────────────────────────────────
    def px(self, dp: float) -> int:
        return round(dp * self.density / 160.0)

    def color(self, role: str, fallback: str = "on_surface") -> RGBA:
        if not role:
            role = fallback
        if role.startswith("#"):
            return hex_rgba(role)
        return self.theme[role]

    # ── frame ────────────────────────────────────────────────────────────────────────
    def render(self, windows: list[View], dark: bool, screen_on: bool = True) -> bytes:
        self.theme = DARK if dark else LIGHT
        self.dark = dark
        first = next((w for w in windows if w.vis is not None), None)
        # A full-screen fill costs ~0.8 ms at 1080x2400; skip the clear when the first
        # window paints every pixel anyway.
        if not (screen_on and first is not None and self._paints_whole_screen(first)):
            _fill(self.img, (0, 0, self.width, self.height), self.theme["bg"])
        if screen_on:
            for w in windows:
                if w.vis is not None:
                    self._tree(self.img, self.draw, w, 0, 0, self.theme["bg"])
        else:
            _fill(self.img, (0, 0, self.width, self.height), _BLACK)
        return bytes(self._buf)

    def _paints_whole_screen(self, v: View) -> bool:
        p = v.paint
        return (p is not None and p.kind == "fill" and not p.radius and bool(p.bg)
                and tuple(v.bounds) == (0, 0, self.width, self.height)
                and self.color(p.bg)[3] == 255)

    @staticmethod
    def png(rgba: bytes, width: int, height: int) -> bytes:
        img = Image.frombuffer("RGBA", (width, height), rgba, "raw", "RGBA", 0, 1)
        out = io.BytesIO()
        img.save(out, "PNG", compress_level=1)
        return out.getvalue()

    def _tree(self, img: Image.Image, draw: ImageDraw.ImageDraw, v: View, ox: int, oy: int,
              behind: RGBA) -> None:
        p = v.paint
        if p is not None:
            if p.kind in ("fill", "card") and p.bg:
                behind = self.color(p.bg)
            self._paint(img, draw, v, ox, oy)
        for c in v.children:
            if c.vis is None:
                continue
            if ox == 0 and oy == 0 and not contains(c.clip, c.bounds):
                self._clipped(c, behind)
            else:
                self._tree(img, draw, c, ox, oy, behind)

    def _clipped(self, v: View, behind: RGBA) -> None:
        """Draw a node that sticks out of its clip: via a scratch image, then paste."""
        b, vis = v.bounds, v.vis
        assert vis is not None
        w, h = b[2] - b[0], b[3] - b[1]
        if w <= 0 or h <= 0 or w * h > self.width * self.height:
            return
        scratch = Image.new("RGBA", (w, h), behind)
        self._tree(scratch, ImageDraw.Draw(scratch), v, -b[0], -b[1], behind)
        crop = scratch.crop((vis[0] - b[0], vis[1] - b[1], vis[2] - b[0], vis[3] - b[1]))
        self.img.paste(crop, (vis[0], vis[1]))

    # ── paints ───────────────────────────────────────────────────────────────────────
    def _paint(self, img: Image.Image, draw: ImageDraw.ImageDraw, v: View, ox: int,
               oy: int) -> None:
        p = v.paint
        assert p is not None
        r = (v.bounds[0] + ox, v.bounds[1] + oy, v.bounds[2] + ox, v.bounds[3] + oy)
        k = p.kind
        if k == "text":
            self._text(img, r, p.text or v.text, p.size, self.color(p.color), p.align, p.bold,
                       wrap="wrap" in p.extra)
        elif k == "fill":
            if p.radius:
                draw.rounded_rectangle(r, radius=self.px(p.radius), fill=self.color(p.bg))
            else:
                _fill(img, r, self.color(p.bg))
        elif k == "card":
            if "scrim" in p.extra and ox == 0 and oy == 0:
                # dim what is behind the dialog: a LUT pass is ~2× faster than compositing
                self.img.paste(self.img.point(_DIM_LUT))
            draw.rounded_rectangle((r[0], r[1], r[2] - 1, r[3] - 1), radius=self.px(p.radius),
                                   fill=self.color(p.bg))
        elif k == "icon":
            self._icon(img, r, p.icon, p.size, self.color(p.color), p.bg)
        elif k == "switch":
            self._switch(img, r, v.checked, v.enabled)
        elif k == "slider":
            self._slider(img, draw, r, p.value)
        elif k == "button":
            if p.bg:
                draw.rounded_rectangle((r[0], r[1], r[2] - 1, r[3] - 1),
                                       radius=min(self.px(p.radius), (r[3] - r[1]) // 2),
                                       fill=self.color(p.bg))
            self._text(img, r, v.text, p.size, self.color(p.color), "center", p.bold)
        elif k == "edit":
            self._edit(img, draw, r, v, p.size, self.color(p.color), "boxed" in p.extra)
        elif k == "divider":
            _fill(img, (r[0], r[1], r[2], r[1] + max(1, self.px(1))), self.color("divider"))
        elif k == "wallpaper":
            img.paste(_wallpaper(self.width, self.height, self.dark), (r[0], r[1]))
        elif k == "app_icon":
            self._app_icon(img, r, v.text, p)
        elif k == "battery":
            self._battery(draw, r, p.value, self.color(p.color), "charging" in p.extra)
        elif k == "icon_text":
            isz = self.px(24)
            self._icon(img, (r[0], r[1], r[0] + isz, r[3]), p.icon, 24,
                       self.color("on_surface_var"), "")
            self._text(img, (r[0] + isz + self.px(16), r[1], r[2], r[3]), v.text, p.size,
                       self.color(p.color), "left", False)
        elif k == "radio":
            d = self.px(20)
            cy = (r[1] + r[3]) // 2
            x0 = r[0] + self.px(2)
            ring = self.theme["primary" if v.checked else "on_surface_var"]
            draw.ellipse((x0, cy - d // 2, x0 + d, cy + d // 2), outline=ring,
                         width=max(1, self.px(2)))
            if v.checked:
                m = self.px(5)
                draw.ellipse((x0 + m, cy - d // 2 + m, x0 + d - m, cy + d // 2 - m), fill=ring)
            self._text(img, (x0 + d + self.px(20), r[1], r[2], r[3]), v.text, p.size,
                       self.color(p.color), "left", False)
        elif k == "keyboard":
            self._keyboard(img, draw, r, p.extra)

    def _text(self, img: Image.Image, r: Rect, s: str, size: float, color: RGBA, align: str,
              bold: bool, wrap: bool = False) -> None:
        if not s:
            return
        px = self.px(size)
        width = r[2] - r[0]
        lines = fonts.wrap(s, px, width) if wrap else [s]
        line_h = round(px * 1.34)
        ascent, descent = fonts.font(px).getmetrics()
        n = max(1, min(len(lines), max(1, (r[3] - r[1]) // line_h)))
        top = r[1] + ((r[3] - r[1]) - n * line_h) // 2
        for i, line in enumerate(lines[:n]):
            if i == n - 1 and len(lines) > n:
                line = line + " " + " ".join(lines[n:])
            line = fonts.ellipsize(line, px, width)
            mask, mx, my = self.masks.get(line, px, bold)
            if mask.size[0] == 0:
                continue
            tw = fonts.text_width(line, px)
            if align == "center":
                x = r[0] + (width - tw) // 2
            elif align == "right":
                x = r[2] - tw
            else:
                x = r[0]
            baseline = top + i * line_h + (line_h - (ascent + descent)) // 2 + ascent
            _ink(img, color, (x + mx, baseline + my), mask, ("text", line, px, bold))

    def _icon(self, img: Image.Image, r: Rect, name: str, size_dp: float, color: RGBA,
              bg: str) -> None:
        s = self.px(size_dp) if size_dp else min(r[2] - r[0], r[3] - r[1])
        spr = icons.sprite(name, s, color, self.color(bg) if bg else None)
        x = r[0] + (r[2] - r[0] - s) // 2
        y = r[1] + (r[3] - r[1] - s) // 2
        _over(img, spr, (x, y)) if x >= 0 and y >= 0 else img.paste(spr, (x, y), spr)

    def _switch(self, img: Image.Image, r: Rect, checked: bool, enabled: bool) -> None:
        w, h = r[2] - r[0], r[3] - r[1]
        t = self.theme
        if checked:
            track, thumb, outline = t["primary"], t["on_primary"], t["primary"]
        else:
            track, thumb, outline = t["surface_var"], t["outline"], t["outline"]
        spr = _switch_sprite(w, h, track, thumb, outline, checked, self.px(2))
        if not enabled:
            spr = _faded(spr)
        _over(img, spr, (max(0, r[0]), max(0, r[1])))

    def _slider(self, img: Image.Image, draw: ImageDraw.ImageDraw, r: Rect,
                value: float) -> None:
        cy = (r[1] + r[3]) // 2
        th = self.px(4)
        thumb = self.px(20)
        left, right = r[0], r[2]
        x = int(left + (right - left) * min(1.0, max(0.0, value)))
        draw.rounded_rectangle((left, cy - th, right, cy + th), radius=th,
                               fill=self.theme["surface_var"])
        if x > left:
            draw.rounded_rectangle((left, cy - th, x, cy + th), radius=th,
                                   fill=self.theme["primary"])
        spr = icons.sprite("dot", thumb, (0, 0, 0, 0), self.theme["primary"])
        _over(img, spr, (max(0, x - thumb // 2), max(0, cy - thumb // 2)))

    def _edit(self, img: Image.Image, draw: ImageDraw.ImageDraw, r: Rect, v: View,
              size: float, color: RGBA, boxed: bool) -> None:
        pad = self.px(16)
        if boxed:
            draw.rounded_rectangle((r[0], r[1], r[2] - 1, r[3] - 1),
                                   radius=(r[3] - r[1]) // 2, fill=self.theme["search_bg"])
        else:
            lw = self.px(2) if v.focused else self.px(1)
            draw.rectangle((r[0], r[3] - lw, r[2] - 1, r[3] - 1),
                           fill=self.theme["primary" if v.focused else "outline"])
            pad = 0
        inner = (r[0] + pad, r[1], r[2] - pad, r[3])
        self._text(img, inner, v.text, size, color, "left", False)
        if v.focused:
            px = self.px(size)
            typed = v.edit.text if v.edit is not None else ""
            x = inner[0] + (fonts.text_width(typed, px) if typed else 0) + self.px(1)
            x = min(x, inner[2] - self.px(2))
            cy = (r[1] + r[3]) // 2
            draw.rectangle((x, cy - px * 6 // 10, x + max(2, self.px(1)) - 1, cy + px * 6 // 10),
                           fill=self.theme["primary"])

    def _app_icon(self, img: Image.Image, r: Rect, label: str, p: object) -> None:
        from farm.sim.world.views import Paint

        assert isinstance(p, Paint)
        s = self.px(p.size or 56)
        bg = hex_rgba(p.bg) if p.bg.startswith("#") else self.color(p.bg or "primary")
        letter = label[:1].upper() if p.icon == "letter" else ""
        spr = icons.sprite(p.icon, s, (255, 255, 255, 255), bg, letter)
        x = r[0] + (r[2] - r[0] - s) // 2
        y = r[1] + self.px(8)
        _over(img, spr, (x, y))
        ty = y + s + self.px(6)
        lh = round(self.px(13) * 1.34)
        self._text(img, (r[0] + self.px(4), ty, r[2] - self.px(4), ty + lh), label, 13,
                   self.color(p.color), "center", False)

    def _battery(self, draw: ImageDraw.ImageDraw, r: Rect, level: float, color: RGBA,
                 charging: bool) -> None:
        # horizontal Pixel-style battery: body outline, fill proportional to level
        h = r[3] - r[1]
        bw, bh = int(h * 0.48), int(h * 0.86)
        x0 = r[0] + (r[2] - r[0] - bw) // 2
        y0 = r[1] + (h - bh) // 2
        cap = max(2, bh // 10)
        draw.rectangle((x0 + bw // 3, y0, x0 + bw - bw // 3, y0 + cap), fill=color)
        body = (x0, y0 + cap, x0 + bw, y0 + bh)
        dim = (color[0], color[1], color[2], 255)
        draw.rounded_rectangle(body, radius=max(1, bw // 6), outline=dim,
                               width=max(1, self.px(1.5)))
        inner_h = body[3] - body[1] - 2 * max(1, self.px(2.5))
        fill_h = int(inner_h * max(0.0, min(1.0, level / 100.0)))
        if fill_h > 0:
            m = max(1, self.px(2.5))
            fill = (220, 50, 47, 255) if level <= 15 and not charging else color
            draw.rectangle((body[0] + m, body[3] - m - fill_h, body[2] - m, body[3] - m),
                           fill=fill)

    def _keyboard(self, img: Image.Image, draw: ImageDraw.ImageDraw, r: Rect,
                  extra: tuple[str, ...]) -> None:
        t = self.theme
        _fill(img, r, t["kb_bg"])
        shifted = bool(extra and extra[0] == "shift")
        suggestion = extra[1] if len(extra) > 1 else ""
        strip = (r[0], r[1], r[2], r[1] + self.px(40))
        if suggestion:
            self._text(img, strip, suggestion, 16, t["kb_text"], "center", False)
        gap = self.px(3)
        for key in keyboard.keys(r, self.density):
            kr = key.rect
            box = (kr[0] + gap, kr[1] + gap * 2, kr[2] - gap, kr[3] - gap * 2)
            fn = key.action not in ("char", "space")
            fill = t["primary"] if key.action == "enter" else t["kb_fn" if fn else "kb_key"]
            draw.rounded_rectangle(box, radius=self.px(6), fill=fill)
            ink = t["on_primary"] if key.action == "enter" else t["kb_text"]
            if key.action == "char":
                label = key.label.upper() if shifted else key.label
                self._text(img, box, label, 22, ink, "center", False)
            elif key.action == "symbols":
                self._text(img, box, "?123", 14, ink, "center", True)
            elif key.action in ("shift", "del", "enter"):
                _key_glyph(draw, box, key.action, ink, shifted, self.px(2))


class _Tiles:
    """Text and sprites already blended over a plain background, shared by every phone
    of the process, bounded in bytes (least recently used out first)."""

    def __init__(self, budget: int) -> None:
        self.budget, self.used = budget, 0
        # key → (tile, what the key's ids refer to: kept alive so no id is reused)
        self.store: OrderedDict[Hashable, tuple[Image.Image, object]] = OrderedDict()
        self._lock = threading.Lock()  # sim farms in two threads of one process share it

    def get(self, key: Hashable) -> Image.Image | None:
        with self._lock:
            hit = self.store.get(key)
            if hit is None:
                return None
            self.store.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, tile: Image.Image, keep: object = None) -> None:
        with self._lock:
            old_entry = self.store.pop(key, None)
            if old_entry is not None:
                self.used -= _rgba_bytes(old_entry[0])
            self.store[key] = (tile, keep)
            self.used += _rgba_bytes(tile)
            while self.used > self.budget and len(self.store) > 1:
                _, (old, _) = self.store.popitem(last=False)
                self.used -= _rgba_bytes(old)


def _rgba_bytes(tile: Image.Image) -> int:
    return tile.width * tile.height * 4


_TILES = _Tiles(32 * 1024 * 1024)


def _plain(img: Image.Image, box: Rect) -> RGBA | None:
    """The colour of ``box`` in ``img`` when every pixel there has it (and the box lies
    inside the image), else None: its top-left pixel, then one compare of the area's
    bytes against that colour repeated (~25 µs for a line of text; getextrema is ~90)."""
    if box[0] < 0 or box[1] < 0 or box[2] > img.width or box[3] > img.height \
            or box[2] <= box[0] or box[3] <= box[1]:
        return None
    pixel: Any = img.getpixel((box[0], box[1]))
    bg: RGBA = tuple(pixel)
    area = img.crop(box).tobytes()
    if len(area) > _PLAIN_MAX:
        return None
    return bg if _repeat(bg).startswith(area) else None  # startswith: a memcmp, no copy


_PLAIN_MAX = 1 << 19  # bytes: larger areas (none in practice) take the blending path


@lru_cache(maxsize=32)
def _repeat(color: RGBA) -> bytes:
    """``color`` repeated for the largest area :func:`_plain` compares (512 KB each)."""
    return bytes(color) * (_PLAIN_MAX // 4)


def _ink(img: Image.Image, color: RGBA, pos: tuple[int, int], mask: Image.Image,
         key: Hashable) -> None:
    """``img.paste(color, pos, mask)``, the same pixels faster: where the area is one
    plain colour (text on a row, a button, a card), the blend over that colour is cached
    and copied in without a mask (~5× fewer cycles than blending ~12 000 pixels per
    line of text again every frame)."""
    box = (pos[0], pos[1], pos[0] + mask.width, pos[1] + mask.height)
    bg = _plain(img, box)
    if bg is None:
        img.paste(color, pos, mask)
        return
    k = (key, color, bg)
    tile = _TILES.get(k)
    if tile is None:
        tile = Image.new("RGBA", mask.size, bg)
        tile.paste(color, (0, 0), mask)
        _TILES.put(k, tile)
    img.paste(tile, pos)


def _over(img: Image.Image, sprite: Image.Image, pos: tuple[int, int]) -> None:
    """``img.alpha_composite(sprite, pos)`` with the same cache as :func:`_ink` (the
    sprites are cached objects, so the sprite itself keys its blends)."""
    box = (pos[0], pos[1], pos[0] + sprite.width, pos[1] + sprite.height)
    bg = _plain(img, box)
    if bg is None or bg[3] != 255:
        img.alpha_composite(sprite, pos)
        return
    k = ("sprite", id(sprite), bg)  # Images compare by content: they do not hash
    tile = _TILES.get(k)
    if tile is None:
        tile = Image.new("RGBA", sprite.size, bg)
        tile.alpha_composite(sprite)
        _TILES.put(k, tile, keep=sprite)
    img.paste(tile, pos)


def _fill(img: Image.Image, box: Rect, color: RGBA) -> None:
    """An opaque rectangle, ``box`` end-exclusive: ``paste`` of a colour fills rows with
    memcpy-like loops, ~4× faster than ``ImageDraw.rectangle`` (0.23 vs 0.89 ms for a
    1080×2400 screen) and the same pixels (neither blends on an RGBA image)."""
    x0, y0 = max(0, box[0]), max(0, box[1])
    x1, y1 = min(img.width, box[2]), min(img.height, box[3])
    if x1 > x0 and y1 > y0:
        img.paste(color, (x0, y0, x1, y1))


def _key_glyph(draw: ImageDraw.ImageDraw, box: Rect, action: str, ink: RGBA, shifted: bool,
               w: int) -> None:
    cx, cy = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
    s = min(box[2] - box[0], box[3] - box[1]) // 4
    if action == "shift":
        pts = [(cx, cy - s), (cx + s, cy), (cx + s // 2, cy), (cx + s // 2, cy + s),
               (cx - s // 2, cy + s), (cx - s // 2, cy), (cx - s, cy)]
        if shifted:
            draw.polygon(pts, fill=ink)
        else:
            draw.polygon(pts, outline=ink, width=w)
    elif action == "del":
        pts = [(cx - s * 3 // 2, cy), (cx - s // 2, cy - s), (cx + s * 3 // 2, cy - s),
               (cx + s * 3 // 2, cy + s), (cx - s // 2, cy + s)]
        draw.polygon(pts, outline=ink, width=w)
        d = s // 2
        draw.line([(cx - d + s // 4, cy - d), (cx + d + s // 4, cy + d)], fill=ink, width=w)
        draw.line([(cx + d + s // 4, cy - d), (cx - d + s // 4, cy + d)], fill=ink, width=w)
    else:  # enter: a return arrow
        draw.line([(cx + s, cy - s), (cx + s, cy + s // 2), (cx - s, cy + s // 2)], fill=ink,
                  width=w)
        draw.polygon([(cx - s - w, cy + s // 2), (cx - s // 3, cy - s // 6),
                      (cx - s // 3, cy + s + s // 6)], fill=ink)


_DIM_LUT = [v * 150 // 255 for v in range(256)] * 3 + list(range(256))


@lru_cache(maxsize=8)
def _wallpaper(width: int, height: int, dark: bool) -> Image.Image:
    """A soft two-tone gradient, like a default Pixel wallpaper."""
    top, bottom = ((24, 54, 92), (9, 18, 36)) if dark else ((76, 132, 196), (32, 66, 122))
    grad = Image.linear_gradient("L").resize((width, height))
    a = Image.new("RGBA", (width, height), (*top, 255))
    b = Image.new("RGBA", (width, height), (*bottom, 255))
    return Image.composite(b, a, grad)


@lru_cache(maxsize=64)
def _switch_sprite(w: int, h: int, track: RGBA, thumb: RGBA, outline: RGBA, checked: bool,
                   stroke: int) -> Image.Image:
    ss = icons.SS
    img = Image.new("RGBA", (w * ss, h * ss), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle((0, 0, w * ss - 1, h * ss - 1), radius=h * ss // 2, fill=track,
                        outline=outline, width=stroke * ss)
    th = (h * 3 // 4 if checked else h // 2) * ss
    cx = (w * ss - h * ss // 2) if checked else h * ss // 2
    cy = h * ss // 2
    d.ellipse((cx - th // 2, cy - th // 2, cx + th // 2, cy + th // 2), fill=thumb)
    return img.resize((w, h), Image.Resampling.LANCZOS)


@lru_cache(maxsize=64)
def _faded(spr: Image.Image) -> Image.Image:
    out = spr.copy()
    out.putalpha(spr.getchannel("A").point(lambda a: a * 38 // 100))
    return out
