"""Synthetic images: shapes on textured canvases, simulated annotators and a matched-filter
oracle whose output depends only on the object (``docs/human.md`` "Synthetic images")."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pytest_xai.cases.human.formats import decode_weighted

SHAPES = ("disc", "square", "triangle", "cross")
SIZE = 32
SHAPES_VERSION = 2  # cache key of the shapes case: 2 = bright background patches, object band 0.6-0.8
RADII = (4, 5, 6, 7)  # half-sizes of the shapes; the matched-filter bank has one template each
RING = 2  # width of the negative surround of a template
GATE = (0.5, 0.85)  # the oracle keeps GATE[0] < x < GATE[1]: objects live in [0.6, 0.8]
# The background has a dark texture in [0.02, 0.4] and, on BRIGHT_FRACTION of each canvas, bright
# patches in [0.9, 1.0], brighter than any object: raw pixel values do not point at the object.
OBJECT_RANGE = (0.6, 0.8)
BRIGHT = (0.9, 1.0)
BRIGHT_FRACTION = 0.4


def gate(x) -> np.ndarray:
    """True where the oracle reads a pixel (its value lies inside the object band GATE)."""
    x = np.asarray(x, dtype=float)
    return (x > GATE[0]) & (x < GATE[1])


def _shape_mask(kind: str, r: int, cy: int, cx: int, size: int = SIZE) -> np.ndarray:
    y, x = np.mgrid[:size, :size]
    dy, dx = y - cy, x - cx
    if kind == "disc":
        return dy**2 + dx**2 <= (r + 0.5) ** 2
    if kind == "square":
        return (np.abs(dy) <= r) & (np.abs(dx) <= r)
    if kind == "triangle":  # apex up, base at the bottom
        return (np.abs(dy) <= r) & (2 * np.abs(dx) <= dy + r)
    if kind == "cross":
        w = max(1, r // 3)
        return ((np.abs(dy) <= r) & (np.abs(dx) <= w)) | ((np.abs(dx) <= r) & (np.abs(dy) <= w))
    raise ValueError(f"unknown shape {kind!r}; known: {SHAPES}")


def _dilate(mask: np.ndarray, steps: int) -> np.ndarray:
    """8-neighbour binary dilation (steps > 0) or erosion (steps < 0) of (..., H, W) masks."""
    out = np.asarray(mask, dtype=bool)
    for _ in range(abs(steps)):
        grow = steps > 0
        padded = np.pad(out, [(0, 0)] * (out.ndim - 2) + [(1, 1), (1, 1)], constant_values=not grow)
        h, w = out.shape[-2:]
        shifted = [padded[..., i : i + h, j : j + w] for i in range(3) for j in range(3)]
        out = np.logical_or.reduce(shifted) if grow else np.logical_and.reduce(shifted)
    return out


def _part(kind: str, r: int, cy: int, cx: int, s: np.ndarray) -> np.ndarray:
    """The "most discriminative part" some annotators mark instead of the whole object."""
    y, x = np.mgrid[:SIZE, :SIZE]
    dy, dx = np.abs(y - cy), np.abs(x - cx)
    if kind == "square":  # the corners
        part = (dy >= r - 2) & (dx >= r - 2)
    elif kind == "cross":  # the crossing
        part = (dy <= max(1, r // 3) + 1) & (dx <= max(1, r // 3) + 1)
    elif kind == "triangle":  # the apex
        part = (y - cy) <= -r + r // 2 + 1
    else:  # disc: the curved rim
        part = dy**2 + dx**2 >= (r - 2) ** 2
    return s & part


def _smooth(rng: np.random.Generator) -> np.ndarray:
    """Smoothed uniform noise (a 5x5 box filter), min-max scaled to [0, 1]."""
    noise = rng.random((SIZE + 4, SIZE + 4))
    smooth = sum((noise[i : i + SIZE, j : j + SIZE] for i in range(5) for j in range(5)), np.zeros((SIZE, SIZE))) / 25.0
    return (smooth - smooth.min()) / (smooth.max() - smooth.min())


def _texture(rng: np.random.Generator) -> np.ndarray:
    """A background outside the oracle's band: a dark texture in [0.02, 0.4] (smoothed noise or
    oriented stripes) and bright patches in [0.9, 1.0] on the brightest ``BRIGHT_FRACTION`` of a
    second smooth field, so the brightest pixels of an image are background, not object."""
    if rng.random() < 0.5:
        smooth = _smooth(rng)
    else:
        y, x = np.mgrid[:SIZE, :SIZE]
        angle, period = rng.uniform(0, np.pi), rng.uniform(4, 10)
        smooth = np.sin(2 * np.pi * (x * np.cos(angle) + y * np.sin(angle)) / period + rng.uniform(0, 6.3))
        smooth = (smooth - smooth.min()) / (smooth.max() - smooth.min())
    dark = 0.02 + 0.38 * smooth
    field = _smooth(rng)
    bright = field >= np.quantile(field, 1.0 - BRIGHT_FRACTION)
    return np.where(bright, BRIGHT[0] + (BRIGHT[1] - BRIGHT[0]) * field, dark)


def _jpeg(weighted: np.ndarray, quality: int) -> np.ndarray:
    """Round-trip (n, H, W) masks through Pillow's JPEG codec, as the benchmark stores them."""
    import io

    from PIL import Image

    out = np.empty(weighted.shape, dtype=np.float32)
    for i, h in enumerate(weighted):
        buffer = io.BytesIO()
        Image.fromarray(np.rint(h * 255).astype(np.uint8), mode="L").save(buffer, "JPEG", quality=quality)
        buffer.seek(0)
        out[i] = decode_weighted(np.asarray(Image.open(buffer).convert("L")))
    return out


def make_shapes(
    n: int,
    *,
    seed: int,
    shapes: Sequence[str] = SHAPES,
    n_annotators: int = 10,
    clip_to_object: bool = False,
    jpeg_quality: int | None = None,
) -> dict[str, np.ndarray]:
    """``n`` seeded 32x32 gray images, one object each, with simulated human annotations.

    Returns arrays ``images`` (n, 32, 32) in [0, 1], ``labels`` (index into ``shapes``),
    ``segmentation`` (bool, the object's pixels), ``weighted`` (mean of the annotators' binary
    masks, multiples of 1/n_annotators), ``annotators`` (n, n_annotators, 32, 32) and the object
    geometry (``radius``, ``cy``, ``cx``, ``intensity``).  Each annotator (Mohseni & Ragan §
    "Annotated Image Examples": a contour around the area most important to recognise the object)
    is, with probability 0.8, the object dilated or eroded by a radius in {-1, 0, 0, 1, 2} with
    boundary jitter (each boundary pixel flipped with probability 0.25), else only the shape's most
    discriminative part (square corners, cross crossing, triangle apex, disc rim) dilated by one;
    with probability 0.15 the annotator adds a stray 2x2-3x3 mark.  ``clip_to_object`` applies
    the paper's "exact contour" masking (h * s); ``jpeg_quality`` round-trips h through JPEG.
    """
    rng = np.random.default_rng(seed)
    labels = rng.integers(len(shapes), size=n)
    out: dict[str, np.ndarray] = {k: np.zeros((n, SIZE, SIZE)) for k in ("images", "weighted")}
    out["segmentation"] = np.zeros((n, SIZE, SIZE), dtype=bool)
    out["annotators"] = np.zeros((n, n_annotators, SIZE, SIZE), dtype=bool)
    geometry = np.zeros((n, 4))
    for i in range(n):
        kind = shapes[labels[i]]
        r = int(rng.choice(RADII))
        margin = r + RING + 1
        cy, cx = (int(v) for v in rng.integers(margin, SIZE - margin, size=2))
        v = rng.uniform(*OBJECT_RANGE)
        s = _shape_mask(kind, r, cy, cx)
        out["images"][i] = np.where(s, v, _texture(rng))
        out["segmentation"][i] = s
        geometry[i] = (r, cy, cx, v)
        boundary = _dilate(s, 1) ^ _dilate(s, -1)
        for a in range(n_annotators):
            if rng.random() < 0.8:
                mark = _dilate(s, int(rng.choice([-1, 0, 0, 1, 2])))
                mark = mark ^ (boundary & (rng.random(s.shape) < 0.25))
            else:
                mark = _dilate(_part(kind, r, cy, cx, s), 1)
            if rng.random() < 0.15:
                k = int(rng.integers(2, 4))
                y0, x0 = (int(t) for t in rng.integers(0, SIZE - k, size=2))
                mark[y0 : y0 + k, x0 : x0 + k] = True
            out["annotators"][i, a] = mark
    weighted = out["annotators"].mean(axis=1)
    if clip_to_object:
        weighted = weighted * out["segmentation"]
    if jpeg_quality is not None:
        weighted = _jpeg(weighted, jpeg_quality)
    out["weighted"] = weighted
    out["labels"] = labels
    out["radius"], out["cy"], out["cx"], out["intensity"] = geometry.T
    return out


def _templates() -> dict[int, np.ndarray]:
    """Matched filters per radius: (len(SHAPES), k, k), +1/|S| on the shape, -1/|ring| on its
    RING-pixel surround, so an exact fit scores the object's intensity and anything else less."""
    bank = {}
    for r in RADII:
        k = 2 * (r + RING) + 1
        c = k // 2
        filters = []
        for kind in SHAPES:
            s = _shape_mask(kind, r, c, c, size=k)
            ring = _dilate(s, RING) & ~s
            filters.append(s / s.sum() - ring / ring.sum())
        bank[r] = np.stack(filters)
    return bank


class ShapesOracle:
    """A fixed matched-filter classifier of :func:`make_shapes` images whose output depends only
    on object pixels.

    z = x * [0.5 < x < 0.85] keeps the object (intensity in [0.6, 0.8]) and zeroes the background,
    whose dark texture (<= 0.4) lies below the band and whose bright patches (>= 0.9) above it;
    logit_c = beta * max over radii and positions of the correlation of z with shape c's filter;
    output softmax(logits).  Hence replacing any background pixels by any values outside the band
    (the baseline 0, another texture, a bright patch) leaves z, and the output, bit-for-bit
    unchanged, and the gradient with respect to every background pixel is exactly 0.  The
    brightest pixels of every image are background, so the raw pixel values, or anything
    computed from the image alone, do not find the object: only the model's gate does.
    """

    FFT = 48  # >= SIZE + the largest template radius, so the circular correlation never wraps
    CHUNK = 64  # rows per FFT batch: bounds memory (CHUNK x 16 x 48 x 48 floats)

    def __init__(self, beta: float = 12.0):
        self.beta = float(beta)
        self.bank = _templates()
        spectra = []
        for filters in self.bank.values():
            k = filters.shape[-1]
            placed = np.zeros((len(SHAPES), self.FFT, self.FFT))
            placed[:, :k, :k] = filters
            placed = np.roll(placed, (-(k // 2), -(k // 2)), axis=(1, 2))  # centre at the origin
            spectra.append(np.conj(np.fft.rfft2(placed)))
        self._spectra = np.concatenate(spectra).astype(np.complex64)  # (radii * shapes, FFT, FFT // 2 + 1)

    def logits(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=float).reshape(-1, SIZE, SIZE)
        z = np.where(gate(x), x, 0.0).astype(np.float32)  # float32 FFTs: twice as fast, logits to ~1e-6
        best = np.empty((len(x), len(SHAPES)))
        shape = (self.FFT, self.FFT)
        for start in range(0, len(x), self.CHUNK):
            spectrum = np.fft.rfft2(z[start : start + self.CHUNK], s=shape)[:, None]
            corr = np.fft.irfft2(spectrum * self._spectra, s=shape)[..., :SIZE, :SIZE]
            peak = corr.max(axis=(-2, -1)).astype(float).reshape(len(spectrum), len(RADII), len(SHAPES))
            best[start : start + self.CHUNK] = peak.max(axis=1)
        return self.beta * best

    def predict(self, x) -> np.ndarray:
        logits = self.logits(x)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    __call__ = predict

    def torch_module(self):
        """The same function as a ``torch.nn.Module`` (conv2d with the filter bank, max-pool,
        softmax), in eval mode, for gradient-based explainers."""
        import torch

        bank = self.bank
        beta = self.beta

        class ShapesOracleNet(torch.nn.Module):
            def __init__(self):
                super().__init__()
                for r, filters in bank.items():
                    self.register_buffer(f"w{r}", torch.tensor(filters[:, None], dtype=torch.float32))

            def forward(self, x):
                x = x.reshape(-1, 1, SIZE, SIZE)
                z = x * ((x > GATE[0]) & (x < GATE[1])).to(x.dtype)
                best = None
                for r in bank:
                    w = getattr(self, f"w{r}")
                    corr = torch.nn.functional.conv2d(z, w, padding=w.shape[-1] // 2).amax(dim=(-2, -1))
                    best = corr if best is None else torch.maximum(best, corr)
                return torch.softmax(beta * best, dim=1)

        return ShapesOracleNet().eval()
