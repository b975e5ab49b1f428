# Sourced by bench/run_*.sh: the peers' venv .venv-bench beside the source
# tree, created and filled from PyPI (numpy, torch, paddlepaddle) when
# missing. torch from PyPI is a multi-GB CUDA build; a peer that cannot be
# installed is reported and the benchmark goes on without it.
#   bench_peer_venv NAME    sets VENV; NAME prefixes the messages
bench_peer_venv() {
  local name="$1"
  VENV="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv-bench"
  if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
  fi
  local module
  for module in numpy:numpy torch:torch paddle:paddlepaddle; do
    if ! "$VENV/bin/python" -c "import ${module%%:*}" 2>/dev/null; then
      echo "$name: installing ${module##*:} into $VENV"
      "$VENV/bin/pip" install -q "${module##*:}" || echo "$name: could not install ${module##*:}; going on"
    fi
  done
}
