"""mpicoll.paddle has paddle.distributed's signatures (Paddle 3.x); v2 has 2.x's alltoall.

The names checked are found by introspection of the installed Paddle, not listed by
hand: every public name of ``paddle.distributed`` whose object is defined in one of
its communication modules (``_HOMES``), and every public name of the namespaces among
them (``paddle.distributed.stream``). Each must exist in ``mpicoll.paddle`` with the
same signature (parameter names, kinds and defaults), or be a key of
``mpicoll.paddle.NOT_PROVIDED`` with a reason. A Paddle release that adds a call
therefore fails here until mpicoll provides it or says why not.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Paddle warns on import that ccache is missing
    import paddle
    import paddle.distributed as paddle_dist  # installed with the suite: never skipped
    from paddle.distributed.communication.group import Group as PaddleGroup

import mpicoll.paddle as dist
import mpicoll.paddle.v2 as dist2

# paddle.distributed's communication layer: the modules whose objects mpicoll mirrors
_HOMES = ("paddle.distributed.communication", "paddle.distributed.collective",
          "paddle.distributed.parallel", "paddle.distributed.parallel_with_gloo")

# what Paddle 3.3.1 has: 39 names of paddle.distributed and the 11 of its stream namespace
_COUNT_IN_3_3_1 = 50

# names that were checked by hand before the list was found by introspection: a floor,
# so a change in Paddle's packaging that hides names from the introspection shows up
_KNOWN = """alltoall alltoall_single reduce_scatter all_gather all_reduce broadcast reduce
scatter gather barrier send recv isend irecv batch_isend_irecv all_gather_object
broadcast_object_list scatter_object_list new_group get_rank get_world_size
init_parallel_env is_initialized P2POp ReduceOp ParallelEnv wait destroy_process_group
get_group get_backend is_available send_object_list recv_object_list gloo_init_parallel_env
gloo_barrier gloo_release stream.all_gather stream.all_reduce stream.alltoall
stream.alltoall_single stream.broadcast stream.gather stream.recv stream.reduce
stream.reduce_scatter stream.scatter stream.send""".split()


def _home(obj) -> str:
    """The module ``obj`` is defined in (a module: its own name)."""
    if inspect.ismodule(obj):
        return obj.__name__
    return getattr(obj, "__module__", None) or ""


def _in_homes(module_name: str) -> bool:
    return any(module_name == h or module_name.startswith(h + ".") for h in _HOMES)


def _public(module) -> list[str]:
    names = {n for n in dir(module) if not n.startswith("_")}
    names |= set(getattr(module, "__all__", ()))
    return sorted(n for n in names if hasattr(module, n))


def _paddle_names(module, prefix: str = "") -> dict[str, object]:
    """Qualified name -> Paddle object, for every call of ``module``'s communication layer.

    A module attribute that is only the package's own submodule
    (``paddle.distributed.communication`` as ``paddle.distributed.communication``) is
    no API; a module exported under another name (``paddle.distributed.stream``, which
    is ``paddle.distributed.communication.stream``) is a namespace, searched in turn.
    """
    found: dict[str, object] = {}
    for name in _public(module):
        obj = getattr(module, name)
        if not _in_homes(_home(obj)):
            continue
        if inspect.ismodule(obj):
            if obj.__name__ != f"{module.__name__}.{name}":
                found.update(_paddle_names(obj, f"{prefix}{name}."))
            continue
        found[prefix + name] = obj
    return found


PADDLE = _paddle_names(paddle_dist)
NAMESPACES = sorted({q.rsplit(".", 1)[0] for q in PADDLE if "." in q})


def _ours(qualified: str):
    """The mpicoll.paddle object of a qualified name, or None."""
    *path, name = qualified.split(".")
    module = dist
    for part in path:
        module = getattr(module, part, None)
        if module is None:
            return None
    return getattr(module, name, None)


def _shape(fn):
    """(name, kind, default) per parameter; a ReduceOp default compares by its value."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if p.name == "op" and default is not inspect.Parameter.empty:
            default = ("ReduceOp", int(default))
        out.append((p.name, p.kind, default))
    return out


def _members(cls) -> dict[str, tuple]:
    """A class's public members: methods by signature, attributes by kind, values by value."""
    out: dict[str, tuple] = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(cls, name)
        if isinstance(static, (staticmethod, classmethod)) or inspect.isfunction(static):
            out[name] = ("method", _shape(getattr(cls, name)))
        elif inspect.isdatadescriptor(static):  # a property or a __slots__ member
            out[name] = ("attribute",)
        else:
            out[name] = ("value", static)
    return out


# -- the list of names ------------------------------------------------------------


def test_names_are_found_by_introspection():
    count = len(PADDLE)
    print(f"\n{count} paddle.distributed names checked against Paddle {paddle.__version__} "
          f"(namespaces: {', '.join(NAMESPACES)})")
    missing = sorted(set(_KNOWN) - set(PADDLE))
    assert not missing, f"introspection no longer finds {missing}"
    assert NAMESPACES == ["stream"]
    if paddle.__version__ == "3.3.1":
        assert count == _COUNT_IN_3_3_1, sorted(PADDLE)


@pytest.mark.parametrize("qualified", sorted(PADDLE))
def test_paddle_name_is_provided_with_its_signature_or_declared_missing(qualified):
    theirs = PADDLE[qualified]
    ours = _ours(qualified)
    if qualified in dist.NOT_PROVIDED:
        reason = dist.NOT_PROVIDED[qualified]
        assert isinstance(reason, str) and reason.strip(), qualified
        assert ours is None, f"{qualified} is provided and listed in NOT_PROVIDED"
        return
    assert ours is not None, (f"paddle.distributed.{qualified} is neither in mpicoll.paddle "
                              "nor in mpicoll.paddle.NOT_PROVIDED")
    if inspect.isclass(theirs):
        assert inspect.isclass(ours), qualified
        # a constructor users call is compared; ReduceOp's (object's own) is not
        if "__init__" in vars(theirs):
            assert _shape(ours.__init__) == _shape(theirs.__init__), qualified
        assert _members(ours) == _members(theirs), qualified
    else:
        assert callable(theirs) and callable(ours), qualified
        assert _shape(ours) == _shape(theirs), qualified


def test_not_provided_names_are_paddles_and_left_out():
    assert dist.NOT_PROVIDED, "NOT_PROVIDED is empty"
    for qualified, reason in dist.NOT_PROVIDED.items():
        *path, name = qualified.split(".")
        module = paddle_dist
        for part in path:
            module = getattr(module, part)
        assert hasattr(module, name), f"{qualified} is not a paddle.distributed name"
        assert isinstance(reason, str) and reason.strip(), qualified
        assert name not in dist.__all__ and name not in dist2.__all__, qualified


def test_provided_names_are_exported():
    for qualified in PADDLE:
        if qualified in dist.NOT_PROVIDED:
            continue
        *path, name = qualified.split(".")
        if path:
            module = importlib.import_module("mpicoll.paddle." + ".".join(path))
            assert name in module.__all__, qualified
            assert path[0] in dist.__all__ and path[0] in dist2.__all__, qualified
        else:
            assert name in dist.__all__ and name in dist2.__all__, qualified


def test_stream_namespace_is_paddles():
    assert dist.stream is importlib.import_module("mpicoll.paddle.stream")
    theirs = {q.split(".", 1)[1] for q in PADDLE if q.startswith("stream.")}
    assert set(dist.stream.__all__) == theirs - {
        q.split(".", 1)[1] for q in dist.NOT_PROVIDED if q.startswith("stream.")}


# -- classes ------------------------------------------------------------------------


def test_group_has_paddles_members():
    # users get a Group from new_group/get_group, never construct one: members matter
    assert _members(dist.Group) == _members(PaddleGroup)


def test_p2pop_instance_has_paddles_attributes():
    # Paddle declares P2POp's instance attributes as class annotations
    op = dist.P2POp(dist.isend, paddle.zeros([1]), 0)
    assert set(vars(op)) == set(vars(paddle_dist.P2POp)["__annotations__"])


def test_reduce_op_values_match_paddle():
    for name in ("SUM", "MAX", "MIN", "PROD", "AVG"):
        assert getattr(dist.ReduceOp, name) == getattr(paddle_dist.ReduceOp, name)


# -- the 2.x order ------------------------------------------------------------------


def _two_x(fn):
    """Paddle 3.x's parameters with the two tensors swapped back to 2.x's order."""
    params = _shape(fn)
    return [params[1], params[0], *params[2:]]


def test_v2_alltoall_has_the_2x_order():
    assert [p[0] for p in _shape(dist2.alltoall)] == [
        "in_tensor_list", "out_tensor_list", "group", "sync_op"]
    assert _shape(dist2.alltoall) == _two_x(paddle_dist.alltoall)


def test_v2_alltoall_single_has_the_2x_order():
    assert [(p[0], p[2]) for p in _shape(dist2.alltoall_single)] == [
        ("in_tensor", inspect.Parameter.empty), ("out_tensor", inspect.Parameter.empty),
        ("in_split_sizes", None), ("out_split_sizes", None), ("group", None), ("sync_op", True)]
    assert _shape(dist2.alltoall_single) == _two_x(paddle_dist.alltoall_single)


def test_v2_reexports_everything_else():
    for name in dist2.__all__:
        if name not in ("alltoall", "alltoall_single"):
            assert getattr(dist2, name) is getattr(dist, name), name
