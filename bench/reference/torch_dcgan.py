#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# torch_dcgan.py — the WGAN-GP training step of etc/fashion-mnist.conf (ganctl's dcgan
# generator and critic) in PyTorch, timed: the reference bench/images.sh sets ganctl's
# image configuration against.
"""WGAN-GP with ganctl's dcgan networks on Fashion-MNIST, in PyTorch, timed.

The networks are those of ganctl's model plugin "dcgan" (plugins/models/dcgan.c) with
norm = "none": the critic is depth stride-2 5x5 convolutions with padding 2 (C -> DIM
-> 2 DIM -> 4 DIM, 28 -> 14 -> 7 -> 4), each followed by LeakyReLU, then a linear
layer to one score; the generator is a linear layer from z to 4 DIM x 4 x 4 with ReLU,
then transposed convolutions (5x5, stride 2, padding 2, output padding 0, 1, 1: 4 -> 7
-> 14 -> 28) with ReLU between them and tanh at the end. Weights He-normal (std
sqrt(2 / fan_in), fan_in the product of a weight's dimensions after the first, as
ganctl's "he"), biases 0. The step is ganctl's: each iteration a generator step (but
in iteration 0) and n_critic critic steps, each on a fresh real batch; the critic's
loss mean D(fake) - mean D(real) + lambda * mean((|grad_x D(x^)|_2 - 1)^2) over the
whole image, x^ = alpha*real + (1-alpha)*fake with alpha ~ U(0, 1) per sample; Adam
with a linear learning-rate decay. Real batches are drawn uniformly from the training
split, scaled to [-1, 1] as ganctl scales them.

Timing: the first --warmup iterations are not timed (they are part of the run).
"""

import argparse
import gzip
import os
import struct
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(prog="torch_dcgan.py", description=__doc__.splitlines()[0])
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                   help="the folder of train-images-idx3-ubyte.gz")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--z-dim", type=int, default=128)
    p.add_argument("--width", type=int, default=16, help="DIM, both networks")
    p.add_argument("--depth", type=int, default=3, help="stride-2 stages, both networks")
    p.add_argument("--leaky-slope", type=float, default=0.2)
    p.add_argument("--lambda", dest="lam", type=float, default=10.0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--beta1", type=float, default=0.5)
    p.add_argument("--beta2", type=float, default=0.9)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--lr-decay", default="linear", choices=["none", "linear"])
    p.add_argument("--decay-iterations", type=int, default=None,
                   help="the run length the linear decay is over (default: --iterations)")
    p.add_argument("--n-critic", type=int, default=5)
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--autocast", default="none", choices=["none", "bf16"],
                   help="bf16: the networks' forwards under torch.autocast('cpu', bfloat16)")
    p.add_argument("--summary", default=None, help="also write KEY=VALUE lines here")
    p.add_argument("--coretype", default=None,
                   help="OpenBLAS core for the fully connected layers (default: "
                        "$OPENBLAS_CORETYPE, else chosen from the CPU's features as "
                        "ganctl's cpu backend chooses it)")
    a = p.parse_args(argv)
    if not 0 <= a.warmup < a.iterations:
        p.error("--warmup must lie in 0 .. --iterations - 1")
    return a


def read_images(torch, folder):
    """The training split as a [N, 1, 28, 28] float tensor in [-1, 1]."""
    path = os.path.join(folder, "train-images-idx3-ubyte.gz")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
    if magic != 0x803:
        raise ValueError("%s is not an IDX image file" % path)
    x = torch.frombuffer(bytearray(raw[16:16 + n * rows * cols]), dtype=torch.uint8)
    return x.view(n, 1, rows, cols).float().div_(127.5).sub_(1.0)


def he_init(torch, module):
    for p in module.parameters():
        if p.dim() > 1:
            fan_in = 1
            for d in p.shape[1:]:
                fan_in *= d
            torch.nn.init.normal_(p, 0.0, (2.0 / fan_in) ** 0.5)
        else:
            torch.nn.init.zeros_(p)


def make_networks(torch, a, channels, side):
    nn = torch.nn
    sizes = [side]
    for _ in range(a.depth):
        sizes.append((sizes[-1] - 1) // 2 + 1)
    chans = [channels] + [a.width << i for i in range(a.depth)]
    critic = []
    for i in range(a.depth):
        critic += [nn.Conv2d(chans[i], chans[i + 1], 5, 2, 2), nn.LeakyReLU(a.leaky_slope)]
    critic += [nn.Flatten(), nn.Linear(chans[-1] * sizes[-1] * sizes[-1], 1)]
    top = chans[-1]
    gen = [nn.Linear(a.z_dim, top * sizes[-1] * sizes[-1]), nn.ReLU(),
           nn.Unflatten(1, (top, sizes[-1], sizes[-1]))]
    for j in range(a.depth):
        src, dst = a.depth - j, a.depth - j - 1
        gen.append(nn.ConvTranspose2d(chans[src], chans[dst], 5, 2, 2,
                                      output_padding=(sizes[dst] - 1) % 2))
        gen.append(nn.ReLU() if j < a.depth - 1 else nn.Tanh())
    G, D = nn.Sequential(*gen), nn.Sequential(*critic)
    he_init(torch, G)
    he_init(torch, D)
    return G, D


class Trainer:
    def __init__(self, torch, a):
        self.torch, self.a = torch, a
        torch.manual_seed(a.seed)
        self.images = read_images(torch, a.data)
        n, c, h, _ = self.images.shape
        self.G, self.D = make_networks(torch, a, c, h)
        self.optG = torch.optim.Adam(self.G.parameters(), lr=a.lr, betas=(a.beta1, a.beta2),
                                     eps=a.eps)
        self.optD = torch.optim.Adam(self.D.parameters(), lr=a.lr, betas=(a.beta1, a.beta2),
                                     eps=a.eps)
        self.gen = torch.Generator().manual_seed(a.seed + 1)
        self.cast = (torch.autocast("cpu", dtype=torch.bfloat16) if a.autocast == "bf16"
                     else None)
        self.last = {}

    def fwd(self, net, x):
        if self.cast is None:
            return net(x)
        with self.torch.autocast("cpu", dtype=self.torch.bfloat16):
            return net(x).float()

    def set_lr(self, it):
        a = self.a
        span = a.decay_iterations or a.iterations
        f = max(0.0, 1.0 - it / span) if a.lr_decay == "linear" else 1.0
        for opt in (self.optG, self.optD):
            for g in opt.param_groups:
                g["lr"] = a.lr * f

    def critic_step(self):
        torch, a = self.torch, self.a
        idx = torch.randint(0, self.images.shape[0], (a.batch,), generator=self.gen)
        real = self.images[idx]
        z = torch.randn(a.batch, a.z_dim)
        alpha = torch.rand(a.batch, 1, 1, 1)
        with torch.no_grad():
            fake = self.fwd(self.G, z)
        d_real = self.fwd(self.D, real).mean()
        d_fake = self.fwd(self.D, fake).mean()
        x_hat = (alpha * real + (1.0 - alpha) * fake).requires_grad_(True)
        d_hat = self.fwd(self.D, x_hat)
        grad, = torch.autograd.grad(d_hat, x_hat, grad_outputs=torch.ones_like(d_hat),
                                    create_graph=True)
        penalty = ((grad.flatten(1).norm(2, dim=1) - 1.0) ** 2).mean()
        loss = d_fake - d_real + a.lam * penalty
        self.optD.zero_grad(set_to_none=True)
        loss.backward()
        self.optD.step()
        self.last["critic_loss"] = float(loss)
        self.last["w_distance"] = float(d_real - d_fake)

    def generator_step(self):
        torch, a = self.torch, self.a
        for p in self.D.parameters():
            p.requires_grad_(False)
        loss = -self.fwd(self.D, self.fwd(self.G, torch.randn(a.batch, a.z_dim))).mean()
        for p in self.D.parameters():
            p.requires_grad_(True)
        self.optG.zero_grad(set_to_none=True)
        loss.backward()
        self.optG.step()
        self.last["generator_loss"] = float(loss)

    def iteration(self, it):
        self.set_lr(it)
        if it > 0:
            self.generator_step()
        for _ in range(self.a.n_critic):
            self.critic_step()


def main(argv):
    a = parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    # OpenBLAS reads its core when torch loads it: OpenBLAS 0.3.21's own detection takes
    # CPUs newer than it knows (an Intel Xeon of CPUID model 207) for the SSE3 "Prescott"
    # core, so the core is chosen as in torch_toy.py
    if a.coretype:
        os.environ["OPENBLAS_CORETYPE"] = a.coretype
    elif not os.environ.get("OPENBLAS_CORETYPE"):
        from torch_toy import coretype_from_cpu
        core = coretype_from_cpu()
        if core:
            os.environ["OPENBLAS_CORETYPE"] = core
    # as in torch_toy.py: spinning OpenMP threads take the cores the next call needs
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch
    except ImportError as e:
        print("torch_dcgan.py: cannot import %s; install PyTorch (Debian: apt-get install "
              "python3-torch)" % e.name, file=sys.stderr)
        return 3
    torch.set_num_threads(a.threads)
    print("# torch %s, %d threads, mkldnn (oneDNN) %s, OMP_WAIT_POLICY=%s, autocast %s, "
          "OPENBLAS_CORETYPE=%s"
          % (torch.__version__, a.threads, torch.backends.mkldnn.is_available(),
             os.environ["OMP_WAIT_POLICY"], a.autocast,
             os.environ.get("OPENBLAS_CORETYPE", "unset")))
    print("# dcgan width %d depth %d, batch %d, z %d, n_critic %d, lambda %g, lr %g, "
          "betas (%g, %g), decay %s, seed %d"
          % (a.width, a.depth, a.batch, a.z_dim, a.n_critic, a.lam, a.lr, a.beta1, a.beta2,
             a.lr_decay, a.seed))
    sys.stdout.flush()
    t_start = time.perf_counter()
    tr = Trainer(torch, a)
    t0 = None
    for it in range(a.iterations):
        if it == a.warmup:
            t0 = time.perf_counter()
        tr.iteration(it)
    t1 = time.perf_counter()
    n_timed = a.iterations - a.warmup
    rate = n_timed / (t1 - t0)
    print("timed: %d iterations (after %d of warm-up) in %.3f s: %.3f it/s; whole run %.2f s; "
          "critic loss %.4f, W %.4f, generator loss %.4f"
          % (n_timed, a.warmup, t1 - t0, rate, t1 - t_start, tr.last.get("critic_loss", 0),
             tr.last.get("w_distance", 0), tr.last.get("generator_loss", 0)))
    if a.summary:
        with open(a.summary, "w") as f:
            for k, v in (("torch_version", torch.__version__), ("threads", a.threads),
                         ("autocast", a.autocast), ("iterations", a.iterations),
                         ("warmup", a.warmup), ("timed_iterations", n_timed),
                         ("timed_s", "%.6f" % (t1 - t0)), ("it_per_s", "%.6f" % rate)):
                f.write("%s=%s\n" % (k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
