"""Run modules in-process as they run on a target host.

Importing any controller code (a filter, an action plugin) in the same pytest process flips
``ansible.module_utils._internal.is_controller``, after which ``module.warn()`` goes to the
controller's display instead of the module result. Module tests must not depend on test order.
"""

import pytest

from ansible.module_utils import _internal


@pytest.fixture(autouse=True)
def _as_target_host(monkeypatch):
    monkeypatch.setattr(_internal, "is_controller", False)
