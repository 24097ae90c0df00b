# SPDX-License-Identifier: MIT
# tensorboard_check.py — reads a run folder's TensorBoard event files with TensorBoard's
# own event reader and checks them against the folder's metrics.csv: the same steps, one
# scalar per column that has values, with the row's value at each step where the row has one, nothing
# else, and final.png as the image "final" at the last step.
#
#   python3 tensorboard_check.py RUN_DIR [EXPECTED_FILES]
import csv
import glob
import math
import os
import struct
import sys

from tensorboard.backend.event_processing import event_accumulator

OVERFLOW = {"none": 0.0, "gradient": 1.0, "forward": 2.0, "both": 3.0}


def expected_value(text):
    if text in OVERFLOW:
        return OVERFLOW[text]
    return struct.unpack("f", struct.pack("f", float(text)))[0]


def same(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def main():
    run_dir = sys.argv[1]
    files = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    if len(sys.argv) > 2 and len(files) != int(sys.argv[2]):
        sys.exit(f"{len(files)} event files in {run_dir}, expected {sys.argv[2]}")
    acc = event_accumulator.EventAccumulator(
        run_dir, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.IMAGES: 0})
    acc.Reload()
    with open(os.path.join(run_dir, "metrics.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    # A column empty in every row (the true underflow below debug level 2) has no scalar.
    columns = [c for c in rows[0].keys()
               if c != "iteration" and any(r[c] != "" for r in rows)]
    tags = set(acc.Tags()["scalars"])
    if tags != set(columns):
        sys.exit(f"scalar tags {sorted(tags)} differ from the columns {sorted(columns)}")
    checked = 0
    for column in columns:
        events = acc.Scalars(column)
        got = {e.step: e.value for e in events}
        if len(got) != len(events):
            sys.exit(f"{column}: a step appears twice")
        want = {int(r["iteration"]): expected_value(r[column]) for r in rows if r[column] != ""}
        if set(got) != set(want):
            sys.exit(f"{column}: steps {sorted(got)} differ from metrics.csv's {sorted(want)}")
        for step, value in want.items():
            if not same(got[step], value):
                sys.exit(f"{column} at step {step}: {got[step]} in the events, {value} in metrics.csv")
            checked += 1
        if any(e.wall_time < 1e9 for e in events):
            sys.exit(f"{column}: a wall time is not seconds since the epoch")
    last = int(rows[-1]["iteration"])
    images = acc.Images("final") if "final" in acc.Tags()["images"] else []
    final_png = os.path.join(run_dir, "final.png")
    if os.path.exists(final_png):
        with open(final_png, "rb") as f:
            png = f.read()
        width, height = struct.unpack(">II", png[16:24])
        if len(images) != 1 or images[0].step != last or images[0].encoded_image_string != png \
                or (images[0].width, images[0].height) != (width, height):
            sys.exit(f"the image \"final\" is not final.png at step {last}")
    print(f"{checked} scalars of {len(columns)} columns and {len(rows)} rows match metrics.csv;"
          f" {len(images)} image")


main()
