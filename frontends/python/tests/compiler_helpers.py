"""Shared by the compiler's Python tests (test_compiler*.py)."""
import os

import oar


def private_compiler_cache(tmp_path_factory, name):
    """A generator for a module fixture: a private compiler cache directory
    (OAR_COMPILER_CACHE_DIR) on the cpu device, restored afterwards."""
    path = tmp_path_factory.mktemp(name)
    previous_cache, previous_device = os.environ.get("OAR_COMPILER_CACHE_DIR"), oar._C.get_device()
    os.environ["OAR_COMPILER_CACHE_DIR"] = str(path)
    oar.set_device("cpu")
    yield path
    oar._C.set_device(previous_device)
    if previous_cache is None:
        os.environ.pop("OAR_COMPILER_CACHE_DIR", None)
    else:
        os.environ["OAR_COMPILER_CACHE_DIR"] = previous_cache
