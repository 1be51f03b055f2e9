#!/usr/bin/env python3
"""Checks executed notebooks: every code cell that draws a figure produced an image.

Saves each image as OUTPUT_DIR/<notebook>.cell<N>.<K>.png, so a developer can open the
figures the CI run drew. Exits 1 naming the notebook and cell when a plotting cell has no
image (a notebook executed under a non-inline matplotlib backend draws nothing).

Usage: check_executed.py OUTPUT_DIR EXECUTED.ipynb [...]
"""
import base64
import json
import os
import re
import sys

# A cell draws when it makes a figure or plots on one (pandas' .plot included).
DRAWS = re.compile(r"plt\.|\.subplots\(|\.plot\(|\.scatter\(|\.bar\(|\.barh\(|\.hist\(")


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    problems = []
    saved = 0
    for path in argv[2:]:
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
        name = os.path.splitext(os.path.basename(path))[0]
        code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
        for n, cell in enumerate(code_cells, start=1):
            source = "".join(cell["source"])
            images = [o["data"]["image/png"] for o in cell.get("outputs", [])
                      if "data" in o and "image/png" in o["data"]]
            for k, image in enumerate(images, start=1):
                png = os.path.join(out_dir, f"{name}.cell{n}.{k}.png")
                with open(png, "wb") as f:
                    f.write(base64.b64decode(image))
                saved += 1
            # A cell that may skip its plot on purpose says so with a "# no figure when" note.
            if DRAWS.search(source) and not images and "# no figure when" not in source:
                problems.append(f"{path}: code cell {n} draws a figure but produced no image")
    for p in problems:
        print(f"check_executed.py: {p}", file=sys.stderr)
    print(f"check_executed.py: {saved} figures saved in {out_dir}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
