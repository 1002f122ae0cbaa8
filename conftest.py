"""Make ``ansible_collections.numaguard.kubelet`` importable when pytest runs from the repo root.

The repository root is the collection root. When it already sits inside
``ansible_collections/numaguard/kubelet`` (ansible-test's copy) nothing is changed; otherwise a
temporary ``ansible_collections/numaguard/kubelet`` symlink to the live tree is made, put on
``sys.path`` and prepended to ``ANSIBLE_COLLECTIONS_PATH`` so ansible subprocesses use live code.
"""

import atexit
import os
import shutil
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_PARTS = _HERE.split(os.sep)

if _PARTS[-3:-2] == ["ansible_collections"] and _PARTS[-2:] == ["numaguard", "kubelet"]:
    _ROOT = os.sep.join(_PARTS[:-3])
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)
else:
    _TMP = tempfile.mkdtemp(prefix="numaguard-coll-")
    os.makedirs(os.path.join(_TMP, "ansible_collections", "numaguard"))
    os.symlink(_HERE, os.path.join(_TMP, "ansible_collections", "numaguard", "kubelet"))
    sys.path.insert(0, _TMP)
    _OLD = os.environ.get("ANSIBLE_COLLECTIONS_PATH")
    os.environ["ANSIBLE_COLLECTIONS_PATH"] = _TMP + (os.pathsep + _OLD if _OLD else "")
    atexit.register(shutil.rmtree, _TMP, True)

# Property tests: no per-example deadline (CI machines are loaded and timing is not what they
# test), and a fixed seed so CI is reproducible. HYPOTHESIS_PROFILE=explore searches afresh.
try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("numaguard", deadline=None, derandomize=True,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "numaguard"))
except ImportError:  # pragma: no cover - hypothesis is in requirements-dev.txt
    pass
