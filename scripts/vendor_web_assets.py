"""Fetch the JavaScript the website needs (MathJax, RequireJS, the Jupyter widget manager) from the npm registry
into `_vendor/` (a second static folder: its files land in `_static/` of the site, and Jupyter Book does
not add them to every page, as it would for files in `_static/`), so that the built site works with no CDN at view time.

Pinned versions, verified against their sha512 integrity hashes; plain Python (no Node.js needed). Idempotent: does
nothing when the files are already there. Run by `make book` / `make test` as part of the set-up.
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "_vendor"
REGISTRY = "https://registry.npmjs.org"

# (package, version, sha512 integrity, {path inside the tarball: destination under _vendor})
PACKAGES = [
    ("mathjax", "3.2.2",
     "Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
     {"package/es5/": "mathjax/"}),
    ("@jupyter-widgets/html-manager", "1.0.6",
     "+Mn+Ra8wyIHrYaUpfmf9A3dsLkt/NuwzPQN8sthdxBD35VV5cOJbpmgMhNR27n/rmP3mKyEe0PWCJrtZrXTXDQ==",
     {"package/dist/embed-amd.js": "embed-amd.js", **{f"package/dist/{font}": f"jupyter-widgets/{font}" for font in (
         "1551f4f60c37af51121f.woff2", "7a3337626410ca2f4071.woff2", "d878b0a6a1144760244f.woff2",
         "2285773e6b4b172f07d9.woff", "bb58e57c48a3e911f15f.woff", "eeccf4f66002c6f2ba24.woff",
         "491974d108fe4002b2aa.ttf", "527940b104eb2ea366c8.ttf", "be9ee23c0c6390141475.ttf",
         "23f19bb08961f37aaf69.eot", "77206a6bb316fa0aded5.eot", "9bbb245e67a133f6e486.eot",
         "2f517e09eb2ca6650ff5.svg", "4689f52cc96215721344.svg", "7a8b4f130182d19a2d7c.svg")}}),
    ("requirejs", "2.3.7",
     "DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/VA8OaUhBa0JPVHJ0pyBkM1z+pDsw==",
     {"package/require.js": "require.min.js"}),
]
SKIP = ("/sre/",)  # MathJax's speech-rule engine: only loaded on demand by the accessibility menu, and large


def fetch(name: str, version: str, integrity: str) -> bytes:
    url = f"{REGISTRY}/{name}/-/{name.split('/')[-1]}-{version}.tgz"
    for attempt in range(3):
        try:
            data = urllib.request.urlopen(url, timeout=120).read()
            break
        except OSError as err:  # a transient network error: try again
            if attempt == 2:
                raise SystemExit(f"could not download {url}: {err}") from err
    digest = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != integrity:
        raise SystemExit(f"integrity check failed for {name}@{version}: got sha512-{digest}")
    return data


def extract(data: bytes, mapping: dict[str, str]) -> int:
    count = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or any(s in member.name for s in SKIP):
                continue
            for src, dst in mapping.items():
                if member.name == src or (src.endswith("/") and member.name.startswith(src)):
                    target = VENDOR / (dst + member.name[len(src):] if src.endswith("/") else dst)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(tar.extractfile(member).read())
                    count += 1
    return count


def main() -> int:
    stamp = VENDOR / ".versions"
    wanted = "\n".join(f"{n}@{v}: {sorted(m.values())}" for n, v, _, m in PACKAGES)
    if stamp.exists() and stamp.read_text() == wanted:
        return 0
    shutil.rmtree(VENDOR, ignore_errors=True)
    for name, version, integrity, mapping in PACKAGES:
        n = extract(fetch(name, version, integrity), mapping)
        print(f"vendored {name}@{version}: {n} files")
    stamp.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
