# SPDX-License-Identifier: MIT
# bench/lib/rounds.sh — sourced by bench/toy.sh and bench/images.sh: figures gathered
# round by round, their median and spread, the table they are printed in, and this
# host's limits (bench/limits) turned into a rate that an iteration cannot beat.
#
# The machines these benchmarks run on are shared, and two back-to-back invocations of
# the same command have differed by 1.4x. So a script runs its configurations in turn,
# A B C A B C ..., for several rounds; a ratio is taken between two runs of the same
# round, never across rounds, and each figure is reported as the median over the rounds
# with the smallest and largest round beside it. A target counts as met when the median
# meets it.
#
# POSIX sh; the sourcing script sets work (a folder) and has sourced bench_lib.sh (die).

# round_put NAME VALUE: VALUE is this round's NAME; an empty VALUE (a run that gave no
# figure) is kept as "?" so that the rounds stay in step.
round_put() {
    mkdir -p "$work/figures"
    printf '%s\n' "${2:-?}" >>"$work/figures/$1"
}

# round_ratio NAME A B: puts A / B as this round's NAME, or "?" when either is missing.
round_ratio() {
    round_put "$1" "$(awk -v a="${2:-}" -v b="${3:-}" \
        'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.6f", a / b }')"
}

# round_stats NAME: "MEDIAN MIN MAX N" over the rounds that gave NAME, nothing when none
# did. The median of an even count is the mean of the middle two.
round_stats() {
    [ -r "$work/figures/$1" ] || return 0
    grep -v '^?$' "$work/figures/$1" | sort -g | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) exit
            m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.6f %.6f %.6f %d\n", m, v[1], v[NR], NR
        }'
}

# round_values NAME: the rounds' values in order, "?" for a missing one.
round_values() {
    [ -r "$work/figures/$1" ] && tr '\n' ' ' <"$work/figures/$1"
}

# round_median NAME: the median alone (empty when no round gave NAME).
round_median() { round_stats "$1" | cut -d' ' -f1; }

# round_row LABEL NAME FORMAT [AIM [UNIT]]: one line of the table. FORMAT is "rate" or
# "seconds" (3 decimals), "ratio" (2 decimals and x), "share" (a percentage of a
# fraction) or "gflops" (1 decimal). With AIM (in FORMAT's unit: 1.3 for 1.3x, 90 for 90 %), the
# line says whether the median meets it. A figure no round gave is left out.
round_row() {
    _stats=$(round_stats "$2")
    _values=$(round_values "$2")
    [ -n "$_stats" ] || return 0
    awk -v label="$1" -v fmt="$3" -v aim="${4:-}" -v stats="$_stats" -v values="$_values" '
        function show(x) {
            if (x == "?") return "?"
            if (fmt == "ratio") return sprintf("%.2fx", x)
            if (fmt == "share") return sprintf("%.0f%%", 100 * x)
            if (fmt == "gflops") return sprintf("%.1f", x)
            return sprintf("%.3f", x)
        }
        BEGIN {
            split(stats, s, " ")
            n = split(values, v, " ")
            each = ""
            for (i = 1; i <= n; i++) each = each (i > 1 ? " " : "") show(v[i])
            med = show(s[1]); spread = show(s[2]) "-" show(s[3])
            verdict = ""
            if (aim != "") {
                target = fmt == "share" ? aim / 100 : aim
                verdict = sprintf("%s %s%s", s[1] >= target ? "meets" : "misses",
                                  aim, fmt == "share" ? "%" : (fmt == "ratio" ? "x" : ""))
            }
            printf "  %-44s %9s  %-17s %-12s  %s\n", label, med, spread, verdict, each
        }'
}

# round_header: the table's first line; ROUNDS is the sourcing script's rounds.
round_header() {
    printf '  %-44s %9s  %-17s %-12s  %s\n' "figure" "median" "spread (min-max)" "aim" \
        "round 1 .. $rounds"
}

# limit_rate NEEDS LIMITS TYPE: GFLOP/s an iteration would reach if every product and
# convolution it does ran at the rate bench/limits measured for its shape: the
# iteration's FLOPs over the sum, across shapes, of the shape's FLOPs over its rate.
# NEEDS is step_flops.awk's output, LIMITS bench/limits', TYPE F32 or BF16. Empty when
# a shape's rate is missing.
limit_rate() {
    awk -v type="$3" '
        FNR == NR { if ($1 == "need") need[$2 " " $3 (($2 == "conv") ? " " $4 : "")] = $NF; next }
        $1 == "gemm" && $2 == type && $4 != "-" { rate["gemm " $3] = $4 }
        $1 == "conv" && $2 == type && $5 != "-" { rate["conv " $3 " " $4] = $5 }
        END {
            for (k in need) {
                if (!(k in rate) || rate[k] <= 0) exit
                total += need[k]; t += need[k] / (rate[k] * 1e9)
            }
            if (t > 0) printf "%.6f\n", total / t * 1e-9
        }' "$1" "$2"
}

# limit_shapes TYPE NEEDS LIMITS...: a line "SHAPE RATE" per shape (for a convolution
# "DIRECTION SHAPE RATE") with the median of the rates the LIMITS files (one a round)
# give for it, "-" for none, in the order of NEEDS.
limit_shapes() {
    _type=$1
    shift
    awk -v type="$_type" '
        FNR == 1 { file++ }
        file == 1 { if ($1 == "need") order[++n] = ($2 == "conv") ? $3 " " $4 : $3; next }
        $1 == "gemm" && $2 == type && $4 != "-" { r[$3, ++c[$3]] = $4 }
        $1 == "conv" && $2 == type && $5 != "-" { k = $3 " " $4; r[k, ++c[k]] = $5 }
        END {
            for (i = 1; i <= n; i++) {
                k = order[i]
                if (!c[k]) { printf "%s -\n", k; continue }
                m = c[k]
                for (a = 1; a <= m; a++) v[a] = r[k, a]
                for (a = 2; a <= m; a++) for (b = a; b > 1 && v[b - 1] > v[b]; b--) {
                    x = v[b]; v[b] = v[b - 1]; v[b - 1] = x
                }
                printf "%s %.1f\n", k, m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
            }
        }' "$@"
}

# limit_lines: limit_shapes' lines as the scripts print them: the GEMM shapes on one line,
# "MxNxK RATE; ...", and a line per convolution shape, "SHAPE: fwd R, bwd_data R,
# bwd_weights R", each indented.
limit_lines() {
    awk 'NF == 2 { g = g (g == "" ? "" : "; ") $1 " " $2 }
         NF == 3 { if (!($2 in c)) o[++n] = $2; c[$2] = c[$2] (c[$2] == "" ? "" : ", ") $1 " " $3 }
         END {
             for (i = 1; i <= n; i++) printf "    %s: %s\n", o[i], c[o[i]]
             if (g != "") printf "    %s\n", g
         }'
}

# host_kind LIMITS: sets units (the units line of bench/limits' output LIMITS) and kind,
# the kind of CPU issue 26 gives its aims for: "AMX-BF16", "AVX512-BF16, no AMX",
# "AVX2, no BF16 dot product" or "unknown".
host_kind() {
    units=
    [ ! -r "$1" ] || units=$(sed -n 's/^units //p' "$1")
    case " $units " in
    *" AMX-BF16 "*) kind="AMX-BF16" ;;
    *" AVX512-BF16 "*) kind="AVX512-BF16, no AMX" ;;
    *" AVX2 "*) kind="AVX2, no BF16 dot product" ;;
    *) kind="unknown" ;;
    esac
}

# flops_line LABEL: an iteration's FLOPs and their parts, from step_flops.awk's figures
# (flop_iter, n_critic, flop_critic, flop_generator, set by the sourcing script).
flops_line() {
    printf '%-9s%s GFLOP an iteration (%d critic steps x %s + 1 generator step x %s; bench/lib/step_flops.awk)\n' \
        "$1" "$(awk -v f="$flop_iter" 'BEGIN { printf "%.3f", f * 1e-9 }')" "$n_critic" \
        "$(awk -v f="$flop_critic" 'BEGIN { printf "%.3f", f * 1e-9 }')" \
        "$(awk -v f="$flop_generator" 'BEGIN { printf "%.3f", f * 1e-9 }')"
}

# limits_libraries LIMITS: the line naming the libraries bench/limits measured, and how.
limits_libraries() {
    echo "limits:  $(sed -n 's/^blas \([^ ]*\) \([0-9]*\) .*/OpenBLAS \1, \2 thread(s)/p' "$1"); $(sed -n 's/^onednn /oneDNN /p' "$1")"
}
