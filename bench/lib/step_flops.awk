# SPDX-License-Identifier: MIT
# bench/lib/step_flops.awk — the products and convolutions of one WGAN-GP training
# iteration, from the networks' layer shapes: their FLOPs per critic step, per
# generator step and per iteration, and, for each shape and direction, the FLOPs an
# iteration spends on it (what bench/limits times, and rounds.sh's limit_rate weighs).
# Used by bench/toy.sh (the mlp pair) and bench/images.sh (the dcgan pair).
#
#   awk -v n_critic=NC -f step_flops.awk LAYERS
#
# LAYERS: one line a layer, each network's from its input to its output:
#   G|D linear B IN OUT          a fully connected layer on a batch of B
#   D conv N C H W O K S P       a convolution of N C×H×W images by O K×K filters,
#                                stride S, padding P
#   G deconv N C H W O K S P     a transposed convolution, given as the convolution it
#                                is the transpose of: its output is that one's C×H×W
#                                input, its input that one's O channels
# Output:
#   flops CRITIC_STEP GENERATOR_STEP ITERATION
#   need gemm MxNxK{NN|NT|TN} FLOP          (each distinct shape once, summed)
#   need conv fwd|bwd_data|bwd_weights N,C,H,W,O,K,S,P FLOP
#
# Cost of a layer, c: every layer does three kinds of product, each of the same size.
#   linear, weight W [OUT, IN] (PyTorch's layout), c = 2·B·IN·OUT FLOPs each:
#     forward          y = x·Wᵀ       GEMM B×OUT×IN, B transposed       (NT)
#     input gradient   dx = dy·W      GEMM B×IN×OUT                     (NN)
#     weight gradient  dW = dyᵀ·x     GEMM OUT×IN×B, A transposed       (TN)
#   conv, c = 2·N·O·Ho·Wo·C·K² FLOPs each (Ho = (H + 2P − K)/S + 1, every output
#   position × kernel tap × input channel × output channel, one multiply and one add):
#     forward = oneDNN's fwd; input gradient = bwd_data; weight gradient = bwd_weights
#   deconv: its forward is the convolution's bwd_data, its input gradient the
#     convolution's fwd, its weight gradient the convolution's bwd_weights.
#
# How many of each a step does. Only what the step needs is counted, so this is the
# work any implementation has to do. Layer l of a network with layers 0 (first) to
# last; "first" and "last" below are the critic's or the generator's.
#   critic step (B real, B fake, B interpolates x̂ = α·real + (1 − α)·fake):
#     generator forward for the fake batch, no gradient       G: forward ×1
#     critic forwards on real, fake and x̂                     D: forward ×3
#     the penalty's inner gradient ∇ₓD(x̂), input gradients
#       through every layer, the first included               D: input gradient ×1
#     outer backward of mean D(real) and mean D(fake):
#       every layer's weight gradient, and the input gradient
#       of all but the first (the data need none)             D: weight gradient ×2,
#                                                                input gradient ×2 (l ≠ first)
#     double backward of the penalty through the inner
#       gradient's products u_l ↦ u_l·W_l (an input-gradient
#       product of u_l): the gradient of its W_l (a weight
#       gradient, same size) and of its u_l (a forward
#       product, same size) for every layer but the last,
#       whose u is the constant seed. The activations'
#       derivatives are steps, constant in the graph, so
#       nothing flows back into the forward of D(x̂)           D: weight gradient ×1,
#                                                                forward ×1 (l ≠ last)
#     per layer of D: forward 3 + [l ≠ last], input gradient 1 + 2·[l ≠ first],
#     weight gradient 3: in all c·(10 − 2·[l = first] − [l = last]).
#     Summed: P_G + 10·P_D − 2·F_D − O_D, P a network's Σ c, F its first layer's c,
#     O the critic's last layer's.
#   generator step (B fake):
#     generator forward, critic forward                      G: forward ×1, D: forward ×1
#     the critic's input gradients through every layer (its
#       weights need none)                                    D: input gradient ×1
#     the generator's weight gradients, and input gradients
#       of all but its first layer (z needs none)             G: weight gradient ×1,
#                                                                input gradient ×1 (l ≠ first)
#     Summed: 3·P_G − F_G + 2·P_D.
#   iteration: n_critic critic steps and one generator step (iteration 0 has no
#     generator step; the figure is the steady state's).
# The paper's toy (mlp, widths 512, depth 3, z 2, 2-D data, B 256, n_critic 5): layers
# 2→512, 512→512, 512→512, 512→2 (G) and 2→512, 512→512, 512→512, 512→1 (D), so
# P_G = 2·256·(1024 + 2·262144 + 1024) = 269.5 MFLOP, P_D = 2·256·(1024 + 2·262144 +
# 512) = 269.2, F_G = F_D = 2·256·1024 = 0.52, O_D = 0.26: 2.960 GFLOP a critic step,
# 1.346 a generator step, 16.15 GFLOP an iteration; the demo (width 256): 0.742, 0.338
# and 4.048 GFLOP.
# The image configuration (dcgan, DIM 16, depth 3, 1×28×28, z 128, B 64, n_critic 5):
# convolutions of c = 2·64·16·14²·1·25 = 10.0 MFLOP (28 → 14), 2·64·32·7²·16·25 = 80.3
# (14 → 7) and 2·64·64·4²·32·25 = 104.9 (7 → 4) in each network (the generator's are
# their transposes), the critic's fully connected layer 2·64·1024·1 = 0.13 and the
# generator's 2·64·128·1024 = 16.8: P_D = 195.3, P_G = 212.0, F_D = 10.0, O_D = 0.13,
# F_G = 16.8, so 2.145 GFLOP a critic step, 1.010 a generator step, 11.73 GFLOP an
# iteration.

function add(key, flop) {
    if (!(key in need)) order[++n_keys] = key
    need[key] += flop
}

# One product of layer i, of kind "forward", "input" or "weight", done `times` times
# an iteration: its FLOPs go to the shape (and direction) it runs at.
function product(i, what, times,   k, conv, dir, spec) {
    if (times == 0) return
    k = kind[i]
    if (k == "linear") {
        if (what == "forward") add("gemm " b[i] "x" out_[i] "x" in_[i] "NT", times * c[i])
        else if (what == "input") add("gemm " b[i] "x" in_[i] "x" out_[i] "NN", times * c[i])
        else add("gemm " out_[i] "x" in_[i] "x" b[i] "TN", times * c[i])
        return
    }
    if (k == "conv") dir = what == "forward" ? "fwd" : what == "input" ? "bwd_data" : "bwd_weights"
    else dir = what == "forward" ? "bwd_data" : what == "input" ? "fwd" : "bwd_weights"
    add("conv " dir " " spec_[i], times * c[i])
}

{
    i = ++n
    net[i] = $1; kind[i] = $2
    if ($2 == "linear") {
        b[i] = $3; in_[i] = $4; out_[i] = $5
        c[i] = 2 * $3 * $4 * $5
    } else if ($2 == "conv" || $2 == "deconv") {
        ho = int(($5 + 2 * $10 - $8) / $9) + 1
        wo = int(($6 + 2 * $10 - $8) / $9) + 1
        c[i] = 2 * $3 * $7 * ho * wo * $4 * $8 * $8
        spec_[i] = $3 "," $4 "," $5 "," $6 "," $7 "," $8 "," $9 "," $10
    } else {
        print "step_flops.awk: unknown layer kind " $2 > "/dev/stderr"
        exit 1
    }
    if (!($1 in first)) first[$1] = i
    last[$1] = i
}

END {
    nc = n_critic + 0
    critic = 0; generator = 0
    for (i = 1; i <= n; i++) {
        isfirst = i == first[net[i]]; islast = i == last[net[i]]
        if (net[i] == "D") {
            fwd_c = 3 + !islast; in_c = 1 + 2 * !isfirst; w_c = 3     # a critic step
            fwd_g = 1; in_g = 1; w_g = 0                              # a generator step
        } else {
            fwd_c = 1; in_c = 0; w_c = 0
            fwd_g = 1; in_g = !isfirst; w_g = 1
        }
        critic += c[i] * (fwd_c + in_c + w_c)
        generator += c[i] * (fwd_g + in_g + w_g)
        product(i, "forward", nc * fwd_c + fwd_g)
        product(i, "input", nc * in_c + in_g)
        product(i, "weight", nc * w_c + w_g)
    }
    printf "flops %.0f %.0f %.0f\n", critic, generator, nc * critic + generator
    for (j = 1; j <= n_keys; j++) printf "need %s %.0f\n", order[j], need[order[j]]
}
