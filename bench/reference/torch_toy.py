#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# torch_toy.py — the WGAN-GP toy model and training step in PyTorch, timed, with ganctl's toy
# quality metrics: the independent reference that bench/toy.sh sets ganctl against.
"""WGAN-GP on the WGAN-GP paper's 2-D toys, as its toy code trains them, in PyTorch, timed.

The networks, losses, optimiser and loop are those ganctl trains (see ganctl(1),
TRAINING): each iteration is a generator step (but in iteration 0) followed by
n_critic critic steps, each on a fresh real batch; the critic's loss is
mean D(fake) - mean D(real) + lambda * mean((|grad_x D(x^)|_2 - target)^2) at
x^ = alpha*real + (1-alpha)*fake, alpha ~ U(0, 1) per sample, the inner gradient
taken with torch.autograd.grad(create_graph=True); the generator's is
-mean D(G(z)). Each network has its own torch.optim.Adam.

The quality metrics are computed as ganctl defines them (ganctl(1), METRICS;
core/toy_metrics.c): on 2,500 samples of the generator for a z fixed for the run
against 2,500 held-out real points, a mode is covered when at least 20 of 2,500
samples lie within 3 sigma of its centre, the high-quality share is the share
within 3 sigma of some centre, and the sliced Wasserstein-1 distance is the mean
over 128 directions of the 1-D W1 between the projections, the directions drawn
from the same Philox4x32-10 stream ganctl uses, so both tools project onto the
very same lines.

Timing: the first --warmup iterations are not timed (they are part of the
training, so --iterations is the whole run); evaluations are not timed either.

One step against ganctl's: --grads-batch FILE writes a batch (real, z, alpha) as
safetensors for `ganctl grads`; --grads-check CHECKPOINT BATCH GRADS loads a ganctl
checkpoint's networks, computes both objectives and their gradients on that batch
with the code the training uses, and compares them with ganctl's dump.
"""

import argparse
import json
import math
import os
import sys
import time


# --------------------------------------------------------------------------- arguments

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="torch_toy.py",
        description="WGAN-GP on a 2-D toy in PyTorch: ganctl's model and step, timed, "
                    "with ganctl's quality metrics.")
    p.add_argument("--data", default="8gaussians",
                   choices=["8gaussians", "25gaussians", "swissroll"])
    p.add_argument("--batch", type=int, default=256, help="samples per step (256)")
    p.add_argument("--z-dim", type=int, default=2, help="size of the noise z (2)")
    p.add_argument("--width", type=int, default=None,
                   help="hidden units of both networks (sets --g-width and --d-width)")
    p.add_argument("--g-width", type=int, default=512)
    p.add_argument("--d-width", type=int, default=512)
    p.add_argument("--depth", type=int, default=None,
                   help="hidden layers of both networks (sets --g-depth and --d-depth)")
    p.add_argument("--g-depth", type=int, default=3)
    p.add_argument("--d-depth", type=int, default=3)
    p.add_argument("--activation", default="relu", choices=["relu", "leaky_relu", "tanh"])
    p.add_argument("--leaky-slope", type=float, default=0.2)
    p.add_argument("--init", default="he", choices=["he", "torch"],
                   help="he: He-normal weights (std sqrt(2/fan_in)) and zero biases, "
                        "ganctl's \"he\"; torch: nn.Linear's own default")
    p.add_argument("--lambda", dest="lam", type=float, default=0.1,
                   help="the gradient penalty's weight (0.1, the paper's toys)")
    p.add_argument("--gp-target", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=None,
                   help="Adam's learning rate for both networks (sets --g-lr and --d-lr)")
    p.add_argument("--g-lr", type=float, default=1e-4)
    p.add_argument("--d-lr", type=float, default=1e-4)
    p.add_argument("--beta1", type=float, default=0.5)
    p.add_argument("--beta2", type=float, default=0.9)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--clip-norm", type=float, default=0.0,
                   help="clip each network's gradient to this global L2 norm; 0 = no")
    p.add_argument("--lr-decay", default="none", choices=["none", "linear"],
                   help="linear: lr * (1 - iteration/iterations), as ganctl's")
    p.add_argument("--n-critic", type=int, default=5, help="critic steps per generator step")
    p.add_argument("--iterations", type=int, default=200,
                   help="generator iterations of the whole run, warm-up included")
    p.add_argument("--warmup", type=int, default=None,
                   help="leading iterations left out of the timing "
                        "(default: 10, or a tenth of a run shorter than 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1,
                   help="torch.set_num_threads and OpenBLAS's thread count (1)")
    p.add_argument("--coretype", default=None,
                   help="OPENBLAS_CORETYPE to load OpenBLAS with (e.g. SkylakeX); default: "
                        "the environment's, else chosen from the CPU's features as "
                        "ganctl's cpu backend chooses it")
    p.add_argument("--device", default="cpu",
                   help="the torch device that trains and is timed, e.g. cpu, cuda, cuda:1 "
                        "(cpu); on a GPU each timed span ends with torch.cuda.synchronize, "
                        "the evaluation copies its samples back to the host")
    p.add_argument("--adam-foreach", default="auto", choices=["auto", "on", "off"],
                   help="torch.optim.Adam's foreach implementation (auto: torch's choice)")
    p.add_argument("--eval-at", default="",
                   help="comma-separated iterations at which to compute the quality "
                        "metrics; they are always computed at the end")
    p.add_argument("--no-eval", action="store_true",
                   help="compute no quality metrics at all, not even at the end")
    p.add_argument("--summary", default=None,
                   help="also write the results as KEY=VALUE lines to this file")
    p.add_argument("--grads-batch", metavar="FILE", default=None,
                   help="write a batch of --batch rows (real, z, alpha; --data, --seed) "
                        "as safetensors for `ganctl grads`, and exit")
    p.add_argument("--grads-check", nargs=3, metavar=("CHECKPOINT", "BATCH", "GRADS"),
                   default=None,
                   help="compute one step's objectives and gradients at a ganctl "
                        "checkpoint's parameters on BATCH (--lambda, --gp-target and "
                        "--activation as the run's) and compare them with GRADS, the "
                        "output of `ganctl grads`; exit 1 when one differs by more "
                        "than --grads-tolerance")
    p.add_argument("--grads-tolerance", type=float, default=1e-4,
                   help="the largest |difference| / max |ganctl's value| of a tensor "
                        "that --grads-check accepts (1e-4)")
    a = p.parse_args(argv)
    if a.width is not None:
        a.g_width = a.d_width = a.width
    if a.depth is not None:
        a.g_depth = a.d_depth = a.depth
    if a.lr is not None:
        a.g_lr = a.d_lr = a.lr
    if a.warmup is None:
        a.warmup = 10 if a.iterations >= 100 else a.iterations // 10
    for name in ("batch", "z_dim", "g_width", "d_width", "n_critic", "iterations", "threads"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.g_depth < 0 or a.d_depth < 0:
        p.error("--depth must be 0 or more")
    if not 0 <= a.warmup < a.iterations:
        p.error("--warmup must be at least 0 and below --iterations, so that some "
                "iterations are timed")
    try:
        a.eval_at = sorted({int(s) for s in a.eval_at.split(",") if s.strip()})
    except ValueError:
        p.error("--eval-at takes iterations separated by commas, e.g. 2000,4000")
    if any(i < 1 or i > a.iterations for i in a.eval_at):
        p.error("--eval-at: every iteration must lie in 1 .. --iterations")
    return a


# --------------------------------------------------------------------------- BLAS set-up

def coretype_from_cpu():
    """OpenBLAS's core name for this CPU, chosen from its instruction-set features the
    way ganctl's cpu backend chooses it (backends/cpu/blas.c): OpenBLAS 0.3.21's own
    detection takes recent Intel models for the SSE3 "Prescott" kernel."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
            else:
                return None
    except OSError:
        return None
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    if "avx" in flags:
        return "Sandybridge"
    return None


def set_up_environment(a):
    """Must run before torch is imported: OpenBLAS reads these in its constructor."""
    if a.coretype:
        os.environ["OPENBLAS_CORETYPE"] = a.coretype
        how = "--coretype"
    elif os.environ.get("OPENBLAS_CORETYPE"):
        how = "the environment"
    else:
        c = coretype_from_cpu()
        if c:
            os.environ["OPENBLAS_CORETYPE"] = c
            how = "chosen from CPU features, as ganctl's cpu backend"
        else:
            how = "unset: OpenBLAS's own detection"
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    # torch's OpenMP threads spin after each parallel region while OpenBLAS's own
    # threads need the same cores for the next GEMM; on two cores shared with other
    # work that made 2 threads 7x slower than 1 (bench/README.md). Passive waiting
    # gives the cores back.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return how


def loaded_openblas():
    """(path, core name, threads) of every OpenBLAS the process has loaded, after
    setting each one's thread count; torch's sgemm may come from any of them."""
    import ctypes
    found = []
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({ln.split()[-1] for ln in f
                            if ln.rstrip().endswith(".so") or ".so." in ln.split()[-1]})
    except OSError:
        return found
    for path in paths:
        base = os.path.basename(path)
        if "blas" not in base and "lapack" not in base:
            continue
        try:
            lib = ctypes.CDLL(path)
            corename = lib.openblas_get_corename
        except (OSError, AttributeError):
            continue
        corename.restype = ctypes.c_char_p
        found.append((path, lib, corename().decode()))
    return found


# --------------------------------------------------------------------------- Philox and metrics

MASK = 0xFFFFFFFF
SW_DIRECTIONS = 128
SW_SEED = 0x746f792d73773100  # ganctl's GAN_TOY_SW_SEED, "toy-sw1\0"
MODE_MIN_HITS = 20
MODE_PER_SAMPLES = 2500
HQ_SIGMAS = 3.0
EVAL_SAMPLES = 2500


def philox_block(seed, block):
    """Block `block` of the Philox4x32-10 stream for `seed` (include/ganctl/philox.h):
    key (seed low, seed high), counter (block low, block high, 0, 0)."""
    k0, k1 = seed & MASK, (seed >> 32) & MASK
    c0, c1, c2, c3 = block & MASK, (block >> 32) & MASK, 0, 0
    for r in range(10):
        if r:
            k0 = (k0 + 0x9E3779B9) & MASK
            k1 = (k1 + 0xBB67AE85) & MASK
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & MASK, p1 & MASK, \
                         ((p0 >> 32) ^ c3 ^ k1) & MASK, p0 & MASK
    return c0, c1, c2, c3


def word_uniform(w):
    """ganctl's uniform of a 32-bit word: its top 24 bits, centred in their interval."""
    return ((w >> 8) + 0.5) * 2.0 ** -24


def sw_directions():
    two_pi = 6.283185307179586476925286766559
    return [two_pi * word_uniform(philox_block(SW_SEED, k)[0]) for k in range(SW_DIRECTIONS)]


def w1_sorted(np, a, b):
    """W1 between the empirical distributions of sorted a and sorted b: the integral of
    |F^-1(q) - G^-1(q)| over the merged steps of both quantile functions, positions in
    units of 1/(n m) so that the step edges are integers."""
    n, m = len(a), len(b)
    if n == m:
        return float(np.abs(a - b).mean())
    edges = np.union1d(np.arange(1, n + 1, dtype=np.int64) * m,
                       np.arange(1, m + 1, dtype=np.int64) * n)
    prev = np.concatenate(([0], edges[:-1]))
    return float(((edges - prev) * np.abs(a[prev // m] - b[prev // n])).sum() / (n * m))


def modes_of(kind):
    """(centres, sigma) of a data set's modes after the paper's toy code's normalisation."""
    if kind == "8gaussians":
        h = 1.0 / math.sqrt(2.0)
        unit = [(1, 0), (-1, 0), (0, 1), (0, -1), (h, h), (h, -h), (-h, h), (-h, -h)]
        return [(2.0 * x / 1.414, 2.0 * y / 1.414) for x, y in unit], 0.02 / 1.414
    if kind == "25gaussians":
        return ([(2.0 * (i // 5 - 2) / 2.828, 2.0 * (i % 5 - 2) / 2.828) for i in range(25)],
                0.05 / 2.828)
    return [], 0.0


class Quality:
    def __init__(self, kind, np):
        self.kind, self.np = kind, np
        self.directions = sw_directions()
        self.centres, self.sigma = modes_of(kind)

    def __call__(self, fake, real):
        """Modes covered, high-quality %, sliced W1 and non-finite samples of `fake`
        (n x 2) against `real` (m x 2), as core/toy_metrics.c computes them."""
        np = self.np
        fake = np.asarray(fake, dtype=np.float32).astype(np.float64)
        real = np.asarray(real, dtype=np.float32).astype(np.float64)
        n = len(fake)
        finite = np.isfinite(fake).all(axis=1)
        out = {"nonfinite": int(n - finite.sum())}
        if self.centres:
            c = np.array(self.centres, dtype=np.float64)
            d2 = ((fake[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
            d2[~finite] = np.inf
            best = d2.argmin(axis=1)
            best_d2 = d2[np.arange(n), best]
            r2 = HQ_SIGMAS * self.sigma * HQ_SIGMAS * self.sigma
            good = finite & (best_d2 <= r2)
            hits = np.bincount(best[good], minlength=len(c))
            per = MODE_PER_SAMPLES // MODE_MIN_HITS
            out["modes"] = int((hits * per >= n).sum())
            out["modes_total"] = len(c)
            out["high_quality_pct"] = 100.0 * float(good.sum()) / n
        if out["nonfinite"] or not np.isfinite(real).all():
            out["sliced_w1"] = float("nan")
        else:
            total = 0.0
            for theta in self.directions:
                cs, sn = math.cos(theta), math.sin(theta)
                pa = np.sort(cs * fake[:, 0] + sn * fake[:, 1])
                pb = np.sort(cs * real[:, 0] + sn * real[:, 1])
                total += w1_sorted(np, pa, pb)
            out["sliced_w1"] = total / SW_DIRECTIONS
        return out


def quality_text(q):
    s = ""
    if "modes" in q:
        s = "modes %d/%d, high-quality %.1f%%, " % (q["modes"], q["modes_total"],
                                                   q["high_quality_pct"])
    s += "sliced W1 %.4f" % q["sliced_w1"]
    if q["nonfinite"]:
        s += ", %d non-finite samples" % q["nonfinite"]
    return s


# --------------------------------------------------------------------------- safetensors

ST_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1"}


def st_read(path, np):
    """The tensors (numpy arrays, BF16 ones left out) and the metadata of a
    safetensors file: an 8-byte little-endian header length, the JSON header, data."""
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, info in header.items():
        dt = ST_DTYPES.get(info["dtype"])
        if dt is None:
            continue
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[base + b:base + e], dtype=dt).reshape(info["shape"])
    return out, meta


def st_write(path, tensors, np):
    """F32 tensors as a safetensors file, the header padded to 8 bytes."""
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(arr)),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


# --------------------------------------------------------------------------- data

class ToyData:
    """The paper's toy code's generators, drawn from a numpy Generator."""

    def __init__(self, kind, batch, rng, np):
        self.kind, self.batch, self.rng, self.np = kind, batch, rng, np
        if kind == "8gaussians":
            self.centres = np.array([(2.0 * x, 2.0 * y) for x, y in
                                     [(1, 0), (-1, 0), (0, 1), (0, -1)] +
                                     [(s / math.sqrt(2), t / math.sqrt(2))
                                      for s, t in [(1, 1), (1, -1), (-1, 1), (-1, -1)]]])
        elif kind == "25gaussians":
            # A fixed set of 100,000 points, shuffled once, read in batches in turn.
            grid = np.array([(2.0 * x, 2.0 * y) for x in range(-2, 3) for y in range(-2, 3)])
            pts = rng.standard_normal((100000, 2)) * 0.05 + np.tile(grid, (4000, 1))
            pts = pts.astype(np.float32)
            rng.shuffle(pts)
            self.fixed = pts / np.float32(2.828)
            self.pos = 0

    def sample(self, n):
        np, rng = self.np, self.rng
        if self.kind == "8gaussians":
            pts = rng.standard_normal((n, 2)) * 0.02 + self.centres[rng.integers(0, 8, n)]
            return (pts.astype(np.float32) / np.float32(1.414))
        if self.kind == "25gaussians":
            grid = np.array([(2.0 * x, 2.0 * y) for x in range(-2, 3) for y in range(-2, 3)])
            pts = rng.standard_normal((n, 2)) * 0.05 + grid[rng.integers(0, 25, n)]
            return (pts.astype(np.float32) / np.float32(2.828))
        # scikit-learn's make_swiss_roll(noise=0.25), columns 0 and 2.
        t = 1.5 * math.pi * (1.0 + 2.0 * rng.random(n))
        pts = np.stack([t * np.cos(t), t * np.sin(t)], axis=1)
        pts = pts + 0.25 * rng.standard_normal((n, 2))
        return (pts / 7.5).astype(np.float32)

    def batch_(self):
        if self.kind != "25gaussians":
            return self.sample(self.batch)
        if self.pos + self.batch > len(self.fixed):
            self.pos = 0
        b = self.fixed[self.pos:self.pos + self.batch]
        self.pos += self.batch
        return b


# --------------------------------------------------------------------------- the model

def activation(torch, a):
    nn = torch.nn
    if a.activation == "relu":
        return nn.ReLU()
    if a.activation == "leaky_relu":
        return nn.LeakyReLU(a.leaky_slope)
    return nn.Tanh()


def make_mlp(torch, in_f, width, depth, out_f, a):
    nn = torch.nn
    layers, prev = [], in_f
    for _ in range(depth):
        layers.append(nn.Linear(prev, width))
        layers.append(activation(torch, a))
        prev = width
    layers.append(nn.Linear(prev, out_f))
    net = nn.Sequential(*layers)
    if a.init == "he":
        with torch.no_grad():
            for m in net:
                if isinstance(m, nn.Linear):
                    m.weight.normal_(0.0, math.sqrt(2.0 / m.in_features))
                    m.bias.zero_()
    return net


def mlp_from_checkpoint(torch, params, prefix, a):
    """The network `prefix` (generator or critic) of a ganctl checkpoint: its layers
    prefix.fcI.weight [out, in] and .bias [out], I = 0, 1, …, as nn.Linear layers
    with the activation between them."""
    nn = torch.nn
    layers, i = [], 0
    while "%s.fc%d.weight" % (prefix, i) in params:
        w = params["%s.fc%d.weight" % (prefix, i)]
        b = params["%s.fc%d.bias" % (prefix, i)]
        if layers:
            layers.append(activation(torch, a))
        lin = nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(np_f32(w)))
            lin.bias.copy_(torch.from_numpy(np_f32(b)))
        layers.append(lin)
        i += 1
    if not layers:
        raise ValueError("the checkpoint has no %s.fc0.weight: it is not a checkpoint of "
                         "ganctl's mlp model" % prefix)
    return nn.Sequential(*layers)


def np_f32(x):
    import numpy as np
    return np.array(x, dtype=np.float32)


def critic_objective(torch, G, D, real, z, alpha, a):
    """The critic's WGAN-GP objective on a batch, as a training step computes it: the
    fake batch from G without a graph, the penalty's inner gradient with
    create_graph so that the objective's gradient goes through it."""
    with torch.no_grad():
        fake = G(z)
    d_real = D(real).mean()
    d_fake = D(fake).mean()
    x_hat = (alpha * real + (1.0 - alpha) * fake).requires_grad_(True)
    d_hat = D(x_hat)
    grad, = torch.autograd.grad(d_hat, x_hat, grad_outputs=torch.ones_like(d_hat),
                                create_graph=True)
    norm = grad.norm(2, dim=1)
    penalty = ((norm - a.gp_target) ** 2).mean()
    loss = d_fake - d_real + a.lam * penalty
    return {"critic_loss": loss, "w_distance": d_real - d_fake, "penalty": penalty,
            "grad_norm": norm.mean()}


def generator_objective(torch, G, D, z):
    """-mean D(G(z)), the critic's parameters frozen so that only G gets gradients."""
    for p in D.parameters():
        p.requires_grad_(False)
    try:
        return -D(G(z)).mean()
    finally:
        for p in D.parameters():
            p.requires_grad_(True)


class Trainer:
    def __init__(self, torch, np, a):
        self.torch, self.np, self.a = torch, np, a
        torch.manual_seed(a.seed)
        self.dev = torch.device(a.device)
        # Initialised on the host from the same seed whatever the device, then moved.
        self.G = make_mlp(torch, a.z_dim, a.g_width, a.g_depth, 2, a).to(self.dev)
        self.D = make_mlp(torch, 2, a.d_width, a.d_depth, 1, a).to(self.dev)
        kw = {}
        if a.adam_foreach != "auto":
            kw["foreach"] = a.adam_foreach == "on"
        self.optG = torch.optim.Adam(self.G.parameters(), lr=a.g_lr, betas=(a.beta1, a.beta2),
                                     eps=a.eps, weight_decay=a.weight_decay, **kw)
        self.optD = torch.optim.Adam(self.D.parameters(), lr=a.d_lr, betas=(a.beta1, a.beta2),
                                     eps=a.eps, weight_decay=a.weight_decay, **kw)
        # Separate streams for the training batches, the held-out points and the
        # evaluation's z, so that evaluating changes nothing in the training.
        self.data = ToyData(a.data, a.batch, np.random.default_rng([a.seed, 0]), np)
        held_out = ToyData(a.data, a.batch, np.random.default_rng([a.seed, 1]), np)
        self.eval_real = held_out.sample(EVAL_SAMPLES)
        self.floor_real = (held_out.sample(EVAL_SAMPLES), held_out.sample(EVAL_SAMPLES))
        gen = torch.Generator().manual_seed(a.seed + 0x5EED)
        self.eval_z = torch.randn(EVAL_SAMPLES, a.z_dim, generator=gen).to(self.dev)
        self.last = {}

    def set_lr(self, iteration):
        a = self.a
        f = 1.0 - iteration / a.iterations if a.lr_decay == "linear" else 1.0
        for opt, lr in ((self.optG, a.g_lr), (self.optD, a.d_lr)):
            for g in opt.param_groups:
                g["lr"] = lr * f

    def critic_step(self):
        torch, a = self.torch, self.a
        real = torch.from_numpy(self.data.batch_()).to(self.dev)
        z = torch.randn(a.batch, a.z_dim, device=self.dev)
        alpha = torch.rand(a.batch, 1, device=self.dev)
        out = critic_objective(torch, self.G, self.D, real, z, alpha, a)
        self.optD.zero_grad(set_to_none=True)
        out["critic_loss"].backward()
        if a.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.D.parameters(), a.clip_norm)
        self.optD.step()
        self.last.update(out)

    def generator_step(self):
        torch, a = self.torch, self.a
        loss = generator_objective(torch, self.G, self.D,
                                   torch.randn(a.batch, a.z_dim, device=self.dev))
        self.optG.zero_grad(set_to_none=True)
        loss.backward()
        if a.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.G.parameters(), a.clip_norm)
        self.optG.step()
        self.last["generator_loss"] = loss

    def iteration(self, it):
        self.set_lr(it)
        if it > 0:
            self.generator_step()
        for _ in range(self.a.n_critic):
            self.critic_step()

    def samples(self):
        with self.torch.no_grad():
            return self.G(self.eval_z).cpu().numpy()

    def losses_text(self):
        parts = []
        for k in ("critic_loss", "generator_loss", "w_distance", "penalty"):
            if k in self.last:
                parts.append("%s %.4f" % (k, float(self.last[k])))
        return ", ".join(parts)


# --------------------------------------------------------------------------- one step against ganctl's

def write_grads_batch(torch, np, a):
    data = ToyData(a.data, a.batch, np.random.default_rng([a.seed, 2]), np)
    gen = torch.Generator().manual_seed(a.seed)
    st_write(a.grads_batch, {
        "real": data.sample(a.batch),
        "z": torch.randn(a.batch, a.z_dim, generator=gen).numpy(),
        "alpha": torch.rand(a.batch, 1, generator=gen).numpy(),
    }, np)
    print("wrote %s: real [%d, 2], z [%d, %d], alpha [%d, 1] (%s, seed %d)"
          % (a.grads_batch, a.batch, a.batch, a.z_dim, a.batch, a.data, a.seed))
    return 0


def check_grads(torch, np, a):
    """Both objectives and their gradients at the checkpoint's parameters on the batch,
    compared tensor by tensor with ganctl's dump. Returns the exit status."""
    ckpt_path, batch_path, grads_path = a.grads_check
    try:
        params, _ = st_read(ckpt_path, np)
        batch, _ = st_read(batch_path, np)
        ref, meta = st_read(grads_path, np)
        G = mlp_from_checkpoint(torch, params, "generator", a)
        D = mlp_from_checkpoint(torch, params, "critic", a)
        real = torch.from_numpy(np_f32(batch["real"]))
        z = torch.from_numpy(np_f32(batch["z"]))
        alpha = torch.from_numpy(np_f32(batch["alpha"]))
    except (OSError, ValueError, KeyError) as e:
        print("torch_toy.py: --grads-check: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 2

    mine = {}
    out = critic_objective(torch, G, D, real, z, alpha, a)
    D.zero_grad(set_to_none=True)
    out["critic_loss"].backward()
    for i, m in enumerate(x for x in D if isinstance(x, torch.nn.Linear)):
        mine["critic.fc%d.weight" % i] = m.weight.grad
        mine["critic.fc%d.bias" % i] = m.bias.grad
    mine["loss.critic"] = out["critic_loss"]
    for k in ("w_distance", "penalty", "grad_norm"):
        mine["loss." + k] = out[k]
    G.zero_grad(set_to_none=True)
    g_loss = generator_objective(torch, G, D, z)
    g_loss.backward()
    for i, m in enumerate(x for x in G if isinstance(x, torch.nn.Linear)):
        mine["generator.fc%d.weight" % i] = m.weight.grad
        mine["generator.fc%d.bias" % i] = m.bias.grad
    mine["loss.generator"] = g_loss

    print("# checkpoint %s (iteration %s), batch %s (%d rows), ganctl's dump %s"
          % (ckpt_path, meta.get("iteration", "?"), batch_path, real.shape[0], grads_path))
    print("%-26s %14s %14s %10s" % ("tensor", "max |ganctl|", "max |diff|", "relative"))
    worst, missing = 0.0, []
    for name in sorted(mine):
        if name not in ref:
            missing.append(name)
            continue
        x = mine[name].detach().numpy().astype(np.float64).reshape(-1)
        y = ref[name].astype(np.float64).reshape(-1)
        if x.shape != y.shape:
            print("%-26s shapes differ: torch %s, ganctl %s" % (name, x.shape, y.shape))
            worst = float("inf")
            continue
        scale = float(np.abs(y).max()) if y.size else 0.0
        diff = float(np.abs(x - y).max()) if y.size else 0.0
        rel = diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
        worst = max(worst, rel)
        print("%-26s %14.6g %14.6g %10.2e" % (name, scale, diff, rel))
    if missing:
        print("not in ganctl's dump: %s" % ", ".join(missing))
    ok = worst <= a.grads_tolerance and not missing
    print("%s: the largest relative difference is %.2e (tolerance %.0e)"
          % ("same step" if ok else "DIFFERENT", worst, a.grads_tolerance))
    return 0 if ok else 1


# --------------------------------------------------------------------------- main

def main(argv):
    a = parse_args(argv)
    how = set_up_environment(a)
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print("torch_toy.py: cannot import %s; install PyTorch (Debian: apt-get install "
              "python3-torch) or run with a Python that has it" % e.name, file=sys.stderr)
        return 3
    torch.set_num_threads(a.threads)
    blas = loaded_openblas()
    for path, lib, _ in blas:
        lib.openblas_set_num_threads(a.threads)
    if a.grads_batch:
        return write_grads_batch(torch, np, a)
    if a.grads_check:
        return check_grads(torch, np, a)

    print("# torch %s, numpy %s, Python %s" % (torch.__version__, np.__version__,
                                              sys.version.split()[0]))
    for line in torch.__config__.show().splitlines():
        if line.strip():
            print("# " + line)
    for line in torch.__config__.parallel_info().splitlines():
        if line.strip():
            print("# " + line)
    print("# OPENBLAS_CORETYPE=%s (%s), OMP_WAIT_POLICY=%s"
          % (os.environ.get("OPENBLAS_CORETYPE", ""), how, os.environ["OMP_WAIT_POLICY"]))
    if blas:
        for path, lib, core in blas:
            print("# OpenBLAS loaded: %s, kernel %s, %d threads"
                  % (path, core, lib.openblas_get_num_threads()))
    else:
        print("# no OpenBLAS in the process: torch's GEMM is not OpenBLAS's here, "
              "so the kernel cannot be matched to ganctl's")
    print("# toy %s, batch %d, z %d, G %d x %d, D %d x %d, %s, init %s, lambda %g, "
          "lr G %g D %g, betas (%g, %g), eps %g, decay %s, n_critic %d, seed %d, %d threads, "
          "device %s"
          % (a.data, a.batch, a.z_dim, a.g_depth, a.g_width, a.d_depth, a.d_width,
             a.activation, a.init, a.lam, a.g_lr, a.d_lr, a.beta1, a.beta2, a.eps,
             a.lr_decay, a.n_critic, a.seed, a.threads, a.device))
    sys.stdout.flush()

    def clock():
        # A GPU runs kernels asynchronously: the clock counts only finished work.
        if tr_dev.type == "cuda":
            torch.cuda.synchronize(tr_dev)
        return time.perf_counter()

    try:
        tr_dev = torch.device(a.device)
        if tr_dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is false")
    except RuntimeError as e:
        print("torch_toy.py: --device %s cannot be used: %s" % (a.device, e), file=sys.stderr)
        return 3
    t_start = clock()
    tr = Trainer(torch, np, a)
    quality = None if a.no_eval else Quality(a.data, np)
    results = {}
    if quality:
        results["floor"] = quality(*tr.floor_real)
        print("real-vs-real floor (%d vs %d samples): %s"
              % (EVAL_SAMPLES, EVAL_SAMPLES, quality_text(results["floor"])))
    timed = 0.0
    t0 = None
    evals = set(a.eval_at) | {a.iterations}
    for it in range(a.iterations):
        if it == a.warmup:
            t0 = clock()
        tr.iteration(it)
        done = it + 1
        if quality and done in evals:
            if t0 is not None:
                timed += clock() - t0
            q = quality(tr.samples(), tr.eval_real)
            results[done] = q
            print("iteration %d: %s; %s" % (done, quality_text(q), tr.losses_text()))
            sys.stdout.flush()
            if t0 is not None:
                t0 = clock()
    if t0 is not None and not (quality and a.iterations in evals):
        timed += clock() - t0
    wall = clock() - t_start
    n_timed = a.iterations - a.warmup
    rate = n_timed / timed if timed > 0 else float("nan")
    print("timed: %d iterations (after %d of warm-up) in %.3f s: %.3f it/s; whole run %.2f s"
          % (n_timed, a.warmup, timed, rate, wall))

    if a.summary:
        kv = {
            "torch_version": torch.__version__,
            "device": a.device if tr_dev.type != "cuda" else
                      "%s (%s)" % (a.device, torch.cuda.get_device_name(tr_dev)),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
            "openblas_kernels": ",".join(sorted({c for _, _, c in blas})) or "none",
            "threads": a.threads,
            "iterations": a.iterations,
            "warmup": a.warmup,
            "timed_iterations": n_timed,
            "timed_s": "%.6f" % timed,
            "it_per_s": "%.6f" % rate,
            "wall_s": "%.3f" % wall,
        }
        for key, q in results.items():
            prefix = "floor" if key == "floor" else "quality_%d" % key
            for k, v in q.items():
                kv["%s_%s" % (prefix, k)] = v
        with open(a.summary, "w") as f:
            for k, v in kv.items():
                f.write("%s=%s\n" % (k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
