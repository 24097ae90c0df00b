# SPDX-License-Identifier: MIT
# fp8_reference.py — an independent reference of one FP8 WGAN-GP training step, written
# with NumPy and ml_dtypes only, against what `ganctl grads` dumps for the same
# checkpoint and batch (tests/e2e/fp8_reference.sh).
#
#   python3 fp8_reference.py batch OUT [--size B] [--seed N]
#       writes a batch file (real, z, alpha; F32) for `ganctl grads`
#   python3 fp8_reference.py check CHECKPOINT BATCH GRADS
#       recomputes the step and compares it with the dump; exit 0 when it agrees and
#       every check of the comparison's power passes, 1 otherwise, 2 when a file
#       cannot be read or the run's settings are not ones this reference covers
#
# What is computed (man/ganctl.conf.5.in, "FP8 products"; precision.level "O1"): a pair
# of mlp networks (fc0 … fcL, each h·Wᵀ + b, leaky ReLU after each hidden layer), the
# critic's objective mean D(G(z)) − mean D(real) + λ·mean((‖∇ₓD(x̂)‖ − target)²) with
# x̂ = G(z) + α·(real − G(z)), and the generator's −mean D(G(z)), with the gradient of
# each objective with respect to its network's parameters. Every matrix product
# rounds both operands to BF16, casts each to FP8 with the recipe "current" (per
# tensor s = 2^e, e the largest integer with amax·2^e ≤ the format's largest value;
# s = 1 for amax 0; saturating), multiplies them with the sum taken in FP64 (ganctl's
# in FP32: see the tolerance below) and rounds the rescaled result to BF16; everything
# else is FP32 (an affine layer's bias is added to the BF16 product in FP32). An
# operand made by a backward pass is cast to E5M2, any other to E4M3 ("hybrid";
# fp8.format "e4m3" casts both to E4M3, and the checks of the wrong formats are then
# left out). The backward passes are written out by hand for this network: the
# first-order ones (each linear layer's dx = g·W and dW = gᵀ·x as products, db = Σ g)
# and the penalty's double backward, i.e. the reverse of the inner backward's
# products dx_i = gp_i·W_i: dW_i += gp_iᵀ·H_i and d(gp_i) = H_i·W_iᵀ, where H_i is the
# outer gradient arriving at dx_i. Every cast is the identity for the derivative
# (straight through). Each product is tagged with a class, for the variants that
# change one class's formats to show that the comparison sees it:
#   forward  the networks' forward products
#   backward the first-order backward products of the objectives' own backward
#   inner    the penalty's inner backward (∇ₓD(x̂)): first order, made by a backward
#   double   the outer backward through the inner backward's products
# Where a value is used several times its gradient is accumulated as ganctl's tape
# does: a weight's gradient arrives at its BF16 copy (shared by every use in a step)
# and is summed there in BF16, newest use first (the penalty's products, then D(real),
# then D(fake)); a bias is summed in FP32.
import argparse
import json
import math
import re
import struct
import sys

import ml_dtypes
import numpy as np

F32 = np.float32
F64 = np.float64
FP8 = {"e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "e5m2": (ml_dtypes.float8_e5m2, 57344.0)}
CLASSES = ("forward", "backward", "inner", "double")

# ------------------------------------------------------------------ the tolerance
#
# The reference and ganctl make the same roundings in the same places; what can differ
# is the order of each product's FP32 sum (OpenBLAS's blocking, the thread count) and of
# the FP32 reductions (the biases' Σ g, the means). Each term of an FP8 product's sum is
# exact in FP32 (at most 4 × 4 significant bits), so such a sum is exact whenever its
# terms lie within about 2^16 of each other, and otherwise differs from the correctly
# rounded one (the reference's: FP64, rounded once) by at most k·2^-24 of Σ|terms|
# (k ≤ 24 here). After the rounding to BF16 (half an ulp is 2^-9 of the value) that is
# invisible, except where a sum lies within that distance of a BF16 rounding boundary:
# then the two results differ by one BF16 ulp, at most 2^-7 of the element (2^-8 of its
# binade's top). A weight's gradient is such a result, summed in BF16 with its other
# uses' (each sum rounds again), so a flip shows in it as at most two ulps, 2^-6
# relative. A flip in an activation or an inner gradient changes what comes after only
# if it also moves that element's FP8 cast (probability about 2^-4 for E4M3, 2^-3 for
# E5M2, given the flip), and flips themselves are rare (the sums are mostly exact):
# over 48 steps (4 runs, 2 checkpoints each, 3 batches, 1 and 2 threads), and 48 more
# with networks of width 32 and depth 3, every weight's gradient and every loss agreed
# bit for bit, and the biases (FP32 sums) to 1.5e-6. So,
# per tensor, one BF16 flip anywhere is allowed and an FP8 flip is not:
#   elementwise |ganctl − reference| ≤ 2^-6·|reference| + 2^-8·max|reference|: two BF16
#               ulps of the element, with a floor of one ulp of the tensor's largest
#               element for elements that are sums of cancelling terms;
#   norm-wise   ‖ganctl − reference‖₂ ≤ 2^-8·‖reference‖₂.
# A loss is an FP32 sum (mean) of BF16-rounded scores and penalties: within 2^-8 of the
# magnitude of what it sums (for the critic's objective, |mean D(fake)| + |mean D(real)|
# + λ·penalty, since the Wasserstein estimate cancels).
# Quantization itself moves the gradients by FP8's resolution (E4M3 2^-4, E5M2 2^-3 of
# an element, partly averaged out in the sums): the comparison must see that, so the
# distance to the same step without FP8 must be several times the norm-wise limit
# (POWER below), and the reference with the wrong format for gradient operands must be
# rejected.
TOL_NORM = 2.0 ** -8
TOL_REL = 2.0 ** -6
TOL_FLOOR = 2.0 ** -8
TOL_LOSS = 2.0 ** -8
POWER = 4.0


# ------------------------------------------------------------------ files

def read_safetensors(path):
    """(tensors, metadata): the F32, F64 and I64 tensors as NumPy arrays of their type."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        dt = {"F32": "<f4", "F64": "<f8", "I64": "<i8"}.get(info["dtype"])
        if dt is None:
            continue
        out[name] = np.frombuffer(raw[base + b:base + e], dtype=dt).reshape(info["shape"]).copy()
    return out, meta


def write_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.tobytes())
        at += a.nbytes
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - (len(text) + 8) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text.encode() + b"".join(blobs))


def parse_config(text):
    """ganctl's saved configuration (libconfig syntax, as the checkpoint's metadata holds
    it) as {"group.key": "value"}, the value as written."""
    out, path = {}, []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r'^("?[\w.-]+"?)\s*=\s*\{$', line)
        if m:
            path.append(m.group(1).strip('"'))
            continue
        if line.startswith("}"):
            path.pop()
            continue
        m = re.match(r'^("?[\w.-]+"?)\s*=\s*(.*?);?$', line)
        if m:
            out[".".join(path + [m.group(1).strip('"')])] = m.group(2).strip()
    return out


class Unsupported(Exception):
    pass


def settings(cfg):
    """The settings the step depends on, checked to be ones this reference writes out."""
    def get(key, default=None):
        v = cfg.get(key, default)
        if v is None:
            raise Unsupported("the checkpoint's configuration has no %s" % key)
        return v.strip('"')

    def need(key, allowed, default=None):
        v = get(key, default)
        if v not in allowed:
            raise Unsupported("%s = %s; this reference covers %s" % (key, v, " or ".join(allowed)))
        return v

    need("precision.mode", ["fp8"])
    need("precision.level", ["O1"])
    if get("precision.fp32", "[]") != "[]":
        raise Unsupported("precision.fp32 = %s; this reference covers []" % get("precision.fp32"))
    need("fp8.recipe", ["current"], '"current"')
    if int(get("fp8.current.margin", "0")) != 0:
        raise Unsupported("fp8.current.margin must be 0")
    fmt = need("fp8.format", ["hybrid", "e4m3"], '"hybrid"')
    need("fp8.rest", ["bf16"], '"bf16"')
    need("fp8.saturate", ["true"], "true")
    need("scaler.name", ["none"])
    need("penalty.inner_scale", ["outer"])
    need("critic.join_batches", ["false"])
    terms = get("loss.terms").replace(" ", "")
    if terms not in ('["wasserstein","gradient-penalty"]', '["gradient-penalty","wasserstein"]'):
        raise Unsupported("loss.terms = %s; this reference covers wasserstein and "
                          "gradient-penalty" % terms)
    need("loss.wasserstein.reduction", ["mean"])
    need("loss.gradient-penalty.reduction", ["mean"])
    need("loss.gradient-penalty.one_sided", ["false"])
    s = {"format": fmt, "lambda": F32(float(get("loss.gradient-penalty.lambda"))),
         "target": F32(float(get("loss.gradient-penalty.target"))),
         "eps": F32(float(get("loss.gradient-penalty.eps")))}
    for net in ("generator", "critic"):
        need(net + ".model.name", ["mlp"])
        need(net + ".model.activation", ["leaky_relu"])
        s[net + ".slope"] = F32(float(get(net + ".model.leaky_slope")))
        s[net + ".depth"] = int(get(net + ".model.depth"))
    return s


# ------------------------------------------------------------------ arithmetic

def bf16(x):
    """x rounded to BF16 (nearest even), as FP32 values."""
    return np.asarray(x, dtype=F32).astype(ml_dtypes.bfloat16).astype(F32)


def current_scale(amax, fmax):
    """The recipe "current": 2^e with e the largest integer such that amax·2^e ≤ fmax
    (exact comparisons), clamped to [-127, 127]; 1 for amax 0."""
    if amax == 0:
        return F32(1.0)
    e = math.floor(math.log2(fmax / amax))
    while math.ldexp(amax, e + 1) <= fmax:
        e += 1
    while math.ldexp(amax, e) > fmax:
        e -= 1
    return F32(math.ldexp(1.0, max(-127, min(127, e))))


def quantize(x, fmt):
    """(q, s): x (BF16 values) scaled by its current scale and cast to FP8 (saturating),
    q widened to FP32 without the scale, as the FP8 GEMM multiplies it."""
    dtype, fmax = FP8[fmt]
    x = np.asarray(x, dtype=F32)
    finite = np.abs(x[np.isfinite(x)])
    amax = float(finite.max()) if finite.size else 0.0
    s = current_scale(amax, fmax)
    y = np.clip(x * s, F32(-fmax), F32(fmax))   # x·s is exact: s is a power of two
    return y.astype(dtype).astype(F32), s


class Arith:
    """How a step computes. mode "fp8": ganctl's FP8 products at O1, with the formats
    formats[class][role] (role "fwd" or "grad"); "bf16": the same at O1 without FP8
    (operands and results rounded to BF16); "fp32": no rounding beyond FP32's."""

    def __init__(self, mode, formats=None):
        self.mode = mode
        self.formats = formats

    def r16(self, x):
        return bf16(x) if self.mode in ("fp8", "bf16") else np.asarray(x, dtype=F32)

    def product(self, a, ta, b, tb, cls, role_a, role_b):
        """op(a)·op(b). Casts are per tensor, so a transposed operand is cast as stored."""
        if self.mode == "fp32":
            A, B = (a.T if ta else a), (b.T if tb else b)
            return (A.astype(F64) @ B.astype(F64)).astype(F32)
        a, b = bf16(a), bf16(b)
        if self.mode == "bf16":
            A, B = (a.T if ta else a), (b.T if tb else b)
            return bf16((A.astype(F64) @ B.astype(F64)).astype(F32))
        qa, sa = quantize(a, self.formats[cls][role_a])
        qb, sb = quantize(b, self.formats[cls][role_b])
        A, B = (qa.T if ta else qa), (qb.T if tb else qb)
        acc = (A.astype(F64) @ B.astype(F64)).astype(F32)
        alpha = (F32(1.0) / sa) * (F32(1.0) / sb)
        return bf16(acc * F32(alpha))


def hybrid(fmt="hybrid", wrong=()):
    """Each class's formats: E4M3 forward operands, E5M2 gradient ones (E4M3 for both
    with fp8.format "e4m3"); the classes named in `wrong` get E4M3 for gradients."""
    grad = "e4m3" if fmt == "e4m3" else "e5m2"
    return {c: {"fwd": "e4m3", "grad": "e4m3" if c in wrong else grad} for c in CLASSES}


# ------------------------------------------------------------------ the network

def leaky(y, slope):
    return np.where(y > 0, y, slope * y).astype(F32)


def leaky_derivative(y, slope):
    """ganctl's d = step(y)·(1 − slope) + slope, in FP32."""
    step = (y > 0).astype(F32)
    return (step * (F32(1.0) - slope) + slope).astype(F32)


class Net:
    def __init__(self, params, prefix, depth, slope):
        self.W = [params["%s.fc%d.weight" % (prefix, i)].astype(F32) for i in range(depth + 1)]
        self.b = [params["%s.fc%d.bias" % (prefix, i)].astype(F32) for i in range(depth + 1)]
        self.depth = depth
        self.slope = slope

    def forward(self, ar, x):
        """The output and what the backward passes read: each layer's BF16 input and
        weight copies and its activation's derivative."""
        h = np.asarray(x, dtype=F32)
        cache = {"hc": [], "wc": [], "d": []}
        for i in range(self.depth + 1):
            hc, wc = ar.r16(h), ar.r16(self.W[i])
            p = ar.product(hc, False, wc, True, "forward", "fwd", "fwd")
            y = (p + self.b[i]).astype(F32)            # the product in BF16, the sum in FP32
            cache["hc"].append(hc)
            cache["wc"].append(wc)
            if i < self.depth:
                cache["d"].append(leaky_derivative(y, self.slope))
                h = leaky(y, self.slope)
            else:
                h = y
        return h, cache

    def backward(self, ar, cache, g, cls, want_params, want_input):
        """The first-order backward from g (FP32, the output's gradient): per layer dW
        (BF16) and db (FP32) when want_params, ∂/∂x (FP32) when want_input, and each
        layer's BF16 gradient operand gp_i (the inner backward's, for its reverse)."""
        L = self.depth
        dW, db, gp_all = [None] * (L + 1), [None] * (L + 1), [None] * (L + 1)
        gx = None
        for i in range(L, -1, -1):
            gp = ar.r16(g)                              # linear_backward's cast of g
            gp_all[i] = gp
            if want_params:
                db[i] = g.astype(F64).sum(axis=0).astype(F32)
                dW[i] = ar.product(gp, True, cache["hc"][i], False, cls, "grad", "fwd")
            if i > 0 or want_input:
                gh = ar.product(gp, False, cache["wc"][i], False, cls, "grad", "fwd")
                if i > 0:
                    g = (gh * cache["d"][i - 1]).astype(F32)
                else:
                    gx = gh
        return dW, gx, db, gp_all

    def double_backward(self, ar, cache, gp, H):
        """The reverse of the inner backward: H (FP32) is the outer gradient of ∂D/∂x;
        returns each weight's contribution (BF16), gp_iᵀ·H_i, with H_{i+1} = (H_i·W_iᵀ)⊙d_i
        (the gradient of gp_i, straight through its cast, through the activation's
        derivative, which is constant almost everywhere)."""
        L = self.depth
        P = [None] * (L + 1)
        for i in range(L + 1):
            Hc = ar.r16(H)                              # the backward of the cast to BF16
            if i < L:
                K = ar.product(Hc, False, cache["wc"][i], True, "double", "grad", "fwd")
            P[i] = ar.product(gp[i], True, Hc, False, "double", "grad", "grad")
            if i < L:
                H = (K * cache["d"][i]).astype(F32)
        return P


def mean(x):
    return F32(x.astype(F64).sum() / x.size) if x.size else F32(0)


def step(ar, s, params, real, z, alpha):
    """Both objectives, their reported values and every parameter's gradient, by the
    names of the dump; and for each loss value the magnitude of what it sums."""
    G = Net(params, "generator", s["generator.depth"], s["generator.slope"])
    D = Net(params, "critic", s["critic.depth"], s["critic.slope"])
    B = real.shape[0]
    lam, target, eps = s["lambda"], s["target"], s["eps"]
    inv_b = F32(1.0 / B)
    out, mag = {}, {}

    # The critic's step: G(z) not differentiated; D(fake), D(real), then the penalty.
    fake, _ = G.forward(ar, z)
    d_fake, c_fake = D.forward(ar, fake)
    d_real, c_real = D.forward(ar, real)
    xhat = (fake + (alpha * (real - fake).astype(F32)).astype(F32)).astype(F32)
    _, c_hat = D.forward(ar, xhat)
    ones = np.ones((B, 1), dtype=F32)
    _, grad_x, _, gp = D.backward(ar, c_hat, ones, "inner", False, True)
    sumsq = (grad_x * grad_x).astype(F32).astype(F64).sum(axis=1).astype(F32)
    norm = np.sqrt((sumsq + eps).astype(F32)) if eps > 0 else np.sqrt(sumsq)
    dev = (norm - target).astype(F32)
    sq = (dev * dev).astype(F32)
    penalty = mean(sq)
    term = F32(lam * penalty)
    w = F32(mean(d_fake) - mean(d_real))
    out["loss.critic"] = F32(w + term)
    out["loss.w_distance"] = -w
    out["loss.penalty"] = penalty
    out["loss.grad_norm"] = mean(norm)
    scores = abs(float(mean(d_fake))) + abs(float(mean(d_real)))
    mag.update({"loss.critic": scores + abs(float(term)), "loss.w_distance": scores,
                "loss.penalty": abs(float(penalty)),
                "loss.grad_norm": abs(float(out["loss.grad_norm"]))})

    # Its backward, seed 1: the penalty's chain in FP32 down to ∂/∂(∇ₓD) …
    g_sq = np.full(B, F32(lam * inv_b), dtype=F32)
    g_dev = (g_sq * (F32(2.0) * dev)).astype(F32)
    g_sumsq = ((F32(0.5) * g_dev).astype(F32) / norm).astype(F32)
    H = (g_sumsq[:, None] * (F32(2.0) * grad_x)).astype(F32)
    # … through the inner backward's products (the newest on the tape), then D(real)'s
    # and D(fake)'s backward.
    P = D.double_backward(ar, c_hat, gp, H)
    seed = np.full((B, 1), inv_b, F32)
    dW_r, _, db_r, _ = D.backward(ar, c_real, -seed, "backward", True, False)
    dW_f, _, db_f, _ = D.backward(ar, c_fake, seed, "backward", True, False)
    for i in range(D.depth + 1):
        out["critic.fc%d.weight" % i] = ar.r16(ar.r16(P[i] + dW_r[i]) + dW_f[i])
        out["critic.fc%d.bias" % i] = (db_r[i] + db_f[i]).astype(F32)

    # The generator's step: −mean D(G(z)), through the critic's products to G's.
    fake_g, c_g = G.forward(ar, z)
    d_g, c_dg = D.forward(ar, fake_g)
    out["loss.generator"] = -mean(d_g)
    mag["loss.generator"] = abs(float(out["loss.generator"]))
    _, g_fake, _, _ = D.backward(ar, c_dg, -seed, "backward", False, True)
    dW_g, _, db_g, _ = G.backward(ar, c_g, g_fake, "backward", True, False)
    for i in range(G.depth + 1):
        out["generator.fc%d.weight" % i] = dW_g[i]
        out["generator.fc%d.bias" % i] = db_g[i]
    return out, mag


# ------------------------------------------------------------------ comparing

def as_shape(got, want):
    return np.asarray(got, F64).reshape(np.shape(want))


def tensor_distance(got, want):
    """(norm-wise relative distance, the worst element's difference as a multiple of its
    elementwise allowance, the largest elementwise relative difference)."""
    got, want = np.asarray(got, F64).ravel(), np.asarray(want, F64).ravel()
    d = np.abs(got - want)
    n_want = np.linalg.norm(want)
    rel_norm = np.linalg.norm(d) / n_want if n_want > 0 else (0.0 if not d.any() else math.inf)
    allow = TOL_REL * np.abs(want) + TOL_FLOOR * np.abs(want).max(initial=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d == 0, 0.0, d / allow)
        rel = np.where(d == 0, 0.0, d / np.abs(want))
    return rel_norm, float(ratio.max(initial=0.0)), float(rel.max(initial=0.0))


def loss_distance(got, want, magnitude):
    """|got − want| as a multiple of the loss's allowance, and relative to |want|."""
    d = abs(float(np.ravel(got)[0]) - float(want))
    allow = TOL_LOSS * magnitude
    return (0.0 if d == 0 else d / allow if allow > 0 else math.inf,
            0.0 if d == 0 else d / abs(float(want)) if want != 0 else math.inf)


def agrees(name, got, want, magnitude):
    if name.startswith("loss."):
        return loss_distance(got, want, magnitude[name])[0] <= 1.0
    rel_norm, ratio, _ = tensor_distance(got, want)
    return rel_norm <= TOL_NORM and ratio <= 1.0


def network_distance(dump, ref, net):
    """The relative L2 distance over all of a network's gradient tensors."""
    names = sorted(k for k in ref if k.startswith(net + "."))
    a = np.concatenate([np.asarray(dump[k], F64).ravel() for k in names])
    b = np.concatenate([np.asarray(ref[k], F64).ravel() for k in names])
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def check(args):
    params, meta = read_safetensors(args.checkpoint)
    batch, _ = read_safetensors(args.batch)
    dump, dmeta = read_safetensors(args.grads)
    try:
        s = settings(parse_config(meta.get("config", "")))
    except Unsupported as e:
        print("fp8_reference.py: %s" % e, file=sys.stderr)
        return 2
    real = batch["real"].astype(F32)
    z = batch["z"].astype(F32)
    alpha = batch["alpha"].astype(F32).reshape(-1, 1)
    print("checkpoint iteration %s, batch of %d, dump precision %s; fp8.format %s, lambda %g"
          % (meta.get("iteration"), real.shape[0], dmeta.get("precision"), s["format"],
             s["lambda"]))

    ref, mag = step(Arith("fp8", hybrid(s["format"])), s, params, real, z, alpha)
    fp32, _ = step(Arith("fp32"), s, params, real, z, alpha)
    bf, _ = step(Arith("bf16"), s, params, real, z, alpha)
    missing = [k for k in ref if k not in dump]
    if missing:
        print("FAIL: the dump lacks %s" % ", ".join(missing))
        return 1
    failures = []

    print("ganctl against the reference; limits: tensors norm-wise %.3g ('rel. L2') and "
          "elementwise %.3g·|ref| + %.3g·max|ref| ('el' ≤ 1), losses %.3g of their terms' "
          "magnitude ('el' ≤ 1):" % (TOL_NORM, TOL_REL, TOL_FLOOR, TOL_LOSS))
    print("  %-22s %10s %10s %7s %10s  %10s %7s  %s" % ("", "max|ref|", "rel. L2", "el",
                                                        "max rel.", "FP32 step:", "el", ""))
    for k in sorted(ref):
        want, got = ref[k], as_shape(dump[k], ref[k])
        if k.startswith("loss."):
            ratio, rel = loss_distance(got, want, mag[k])
            far = loss_distance(fp32[k], want, mag[k])[0]
            print("  %-22s %10.4g %10s %7.3f %10.2e  %10s %7.1f  %s"
                  % (k, float(want), "-", ratio, rel, "-", far, "ok" if ratio <= 1 else "DIFFERS"))
        else:
            rel_norm, ratio, rel = tensor_distance(got, want)
            far_norm, far, _ = tensor_distance(fp32[k], want)
            print("  %-22s %10.4g %10.2e %7.3f %10.2e  %10.2e %7.1f  %s"
                  % (k, np.abs(want).max(initial=0), rel_norm, ratio, rel, far_norm, far,
                     "ok" if agrees(k, got, want, mag) else "DIFFERS"))
        if not agrees(k, got, want, mag):
            failures.append("%s differs from the reference" % k)

    # The comparison's power: without FP8 (FP32, or BF16 products) the step is far away.
    for net in ("critic", "generator"):
        to_ref = network_distance(dump, ref, net)
        to_fp32 = network_distance(dump, fp32, net)
        to_bf16 = network_distance(dump, bf, net)
        print("%s gradients, relative L2 over all its tensors: to the reference %.2e; to the "
              "unquantized FP32 step %.2e (%.1f× the limit); to the BF16 step without FP8 %.2e"
              % (net, to_ref, to_fp32, to_fp32 / TOL_NORM, to_bf16))
        for what, far in (("the unquantized FP32 step", to_fp32),
                          ("the BF16 step without FP8", to_bf16)):
            if not far >= POWER * TOL_NORM:
                failures.append("the %s's gradients are within %.2e of %s, less than %g times "
                                "the limit: the comparison cannot tell FP8 from it"
                                % (net, far, what, POWER))

    # And with the wrong format for gradient operands the reference must no longer match
    # the dump: in each class of products on its own, seen where that class acts (the
    # inner backward also in the penalty's value, the first-order backward in both
    # networks), and in all of them.
    if s["format"] == "hybrid":
        print("the reference with E4M3 gradient operands must be rejected:")
        for wrong, where in ((("inner",), ("critic.", "loss.")), (("double",), ("critic.",)),
                             (("backward",), ("critic.", "generator.")),
                             (CLASSES, ("critic.", "generator.", "loss."))):
            alt, alt_mag = step(Arith("fp8", hybrid("hybrid", wrong)), s, params, real, z, alpha)
            bad = [k for k in sorted(alt)
                   if not agrees(k, as_shape(dump[k], alt[k]), alt[k], alt_mag)]
            print("  in the %s products: rejected by %d of %d: %s"
                  % ("+".join(wrong), len(bad), len(alt), ", ".join(bad) or "none"))
            for prefix in where:
                if not any(k.startswith(prefix) for k in bad):
                    failures.append("E4M3 gradient operands in the %s products match every %s* "
                                    "value of the dump: the comparison cannot see that rule there"
                                    % ("+".join(wrong), prefix))

    if failures:
        for f in failures:
            print("FAIL: %s" % f)
        return 1
    print("verdict: ganctl's FP8 step agrees with the reference, and is measurably neither the "
          "step without FP8 nor one with the wrong formats")
    return 0


def make_batch(args):
    rng = np.random.default_rng(args.seed)
    B = args.size
    # Real points near the 8 Gaussians' modes, z standard normal, α uniform.
    angle = rng.integers(0, 8, B) * (np.pi / 4)
    real = (np.stack([2 * np.cos(angle), 2 * np.sin(angle)], axis=1)
            + 0.05 * rng.standard_normal((B, 2)))
    write_safetensors(args.out, {"real": real.astype(F32),
                                 "z": rng.standard_normal((B, args.z_dim)).astype(F32),
                                 "alpha": rng.uniform(0, 1, (B, 1)).astype(F32)})
    return 0


def main(argv):
    p = argparse.ArgumentParser(prog="fp8_reference.py")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("batch", help="write a batch file for ganctl grads")
    b.add_argument("out")
    b.add_argument("--size", type=int, default=16)
    b.add_argument("--z-dim", type=int, default=2)
    b.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("check", help="compare a ganctl grads dump with the reference")
    c.add_argument("checkpoint")
    c.add_argument("batch")
    c.add_argument("grads")
    a = p.parse_args(argv)
    try:
        return make_batch(a) if a.command == "batch" else check(a)
    except (OSError, ValueError, KeyError) as e:
        print("fp8_reference.py: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
