"""Run modules in-process as they run on a target host.

Importing any controller code (a filter, an action plugin) in the same pytest process flips
``ansible.module_utils._internal.is_controller``, after which ``module.warn()`` goes to the
controller's display instead of the module result. Module tests must not depend on test order.
ansible-core before 2.19 has no such switch (2.18 has the ``_internal`` package without it).
"""

import pytest

try:
    from ansible.module_utils import _internal
except ImportError:  # ansible-core < 2.19
    _internal = None


@pytest.fixture(autouse=True)
def _as_target_host(monkeypatch):
    if hasattr(_internal, "is_controller"):
        monkeypatch.setattr(_internal, "is_controller", False)
