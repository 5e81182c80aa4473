# Sourced by the Autobahn scripts: the testsuite's `wstest` (in $venv) and the verdict on its
# report. `autobahntestsuite` runs on Python 2 only: a virtualenv is made for it from a Python
# 2.7 found on PATH or pyenv's, installing the package from the registry with pip the first
# time (kept in $AUTOBAHN_VENV, default ~/.cache/web-autobahn). No Python 2.7 is a failure,
# never a skip. Callers define `die`.

python2=""
for candidate in python2.7 python2 "$HOME"/.pyenv/versions/2.7*/bin/python /root/.pyenv/versions/2.7*/bin/python; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (2, 7))' 2>/dev/null; then
        python2=$(command -v "$candidate")
        break
    fi
done
[[ -n $python2 ]] || die "no Python 2.7 found (autobahntestsuite needs it; pyenv install 2.7.18)"

venv=${AUTOBAHN_VENV:-$HOME/.cache/web-autobahn}
if [[ ! -x $venv/bin/wstest ]]; then
    echo "autobahn: installing autobahntestsuite into $venv (Python 2.7: $python2)"
    timeout 600 "$python2" -m pip install --quiet virtualenv 2>/dev/null ||
        timeout 600 "$python2" -m ensurepip --user >/dev/null 2>&1 || true
    timeout 600 "$python2" -m virtualenv --quiet "$venv" || die "could not make a virtualenv with $python2"
    timeout 900 "$venv/bin/pip" install --quiet autobahntestsuite 2>/dev/null ||
        die "pip could not install autobahntestsuite"
fi
[[ -x $venv/bin/wstest ]] || die "wstest is missing from $venv"

# autobahn_verdict NAME INDEX.JSON AGENT COUNT: every case of AGENT must end OK, NON-STRICT or
# INFORMATIONAL (its closing behaviour too), and COUNT cases must be reported.
autobahn_verdict() {
    python3 - "$@" <<'PY'
import json, sys
name, path, agent, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
results = json.load(open(path))[agent]
verdicts = {}
for case, r in results.items():
    verdicts.setdefault(r["behavior"], []).append(case)
    if r.get("behaviorClose") not in ("OK", "INFORMATIONAL", "NON-STRICT"):
        verdicts.setdefault("close " + r["behaviorClose"], []).append(case)
good = {"OK", "NON-STRICT", "INFORMATIONAL"}
bad = {k: v for k, v in verdicts.items() if k not in good}
summary = ", ".join(f"{k} {len(v)}" for k, v in sorted(verdicts.items()))
print(f"{name}: {len(results)} of {count} cases reported: {summary}")
if len(results) != count or bad:
    for k, v in sorted(bad.items()):
        print(f"{name}: {k}: {' '.join(sorted(v)[:20])}")
    print(f"{name}: FAIL")
    sys.exit(1)
print(f"{name}: passed")
PY
}
