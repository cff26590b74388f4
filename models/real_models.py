"""The paths of the real models (models/fetch_real_models.py), for the scripts that use them."""
import os
import subprocess
import sys

NAMES = ("resnet50", "minilm", "smollm2")


def fetched(names=NAMES):
    """{name: path} of the models, fetched and exported first where the cache lacks them: the
    fetcher runs in a subprocess (the exporters' imports and progress output stay there)."""
    fetcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fetch_real_models.py")
    out = subprocess.run([sys.executable, fetcher, "--only", ",".join(names)], check=True, capture_output=True,
                         text=True).stdout
    # "NAME PATH" lines; a first export also prints the exporter's progress on stdout: the last
    # line of a name is its path.
    paths = {}
    for line in out.splitlines():
        words = line.split(maxsplit=1)
        if len(words) == 2 and words[0] in names:
            paths[words[0]] = words[1]
    return paths
