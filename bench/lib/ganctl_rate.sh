# SPDX-License-Identifier: MIT
# bench/lib/ganctl_rate.sh — sourced by bench/bf16.sh and bench/images.sh: one timed ganctl
# run and the ratio of two rates, the same in both so that their figures compare.
#
# The sourcing script sets: ganctl (the program), run_args (its settings, an array),
# iterations, warmup and work (a folder for the runs), and has sourced bench/lib/bench_lib.sh
# for die.

# ganctl_rate NAME [settings...]: one run in $work/NAME; prints its iterations per second
# over iterations warmup .. iterations - 1 from metrics.csv's time_s (the final
# evaluation at the last iteration is left out).
ganctl_rate() {
    local name=$1
    shift
    rm -rf "$work/$name"
    "$ganctl" "${run_args[@]}" "$@" -s run.iterations="$iterations" -s run.eval_every=0 \
        -s run.image_every=0 -s run.checkpoint_every=0 -s run.log_every=1 \
        -s run.metrics_time=true -s run.dir="$work/$name" >"$work/$name.out" 2>"$work/$name.err" ||
        die "ganctl ($name) failed: $(tail -n 3 "$work/$name.err")"
    awk -F, -v w="$warmup" -v n="$((iterations - 1))" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_s") c = i; next }
        $1 == w { a = $c } $1 == n { b = $c }
        END { if (c && b > a) printf "%.4f", (n - w) / (b - a) }' "$work/$name/metrics.csv"
}

# ratio A B: "1.23x", or "?" when either rate is missing.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "?" }'; }
