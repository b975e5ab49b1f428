"""oar.jit (paddle.jit): not available yet. to_static, save and load need the
IR and compiler of the IR issue; until then models run eagerly and
oar.save/oar.load store their state dicts."""


def _unavailable(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"oar.jit.{name} is not available yet: it needs oar's IR (the IR issue); "
                                  "run the model eagerly and store it with oar.save(layer.state_dict(), path)")
    fn.__name__ = name
    return fn


to_static = _unavailable("to_static")
save = _unavailable("save")
load = _unavailable("load")
not_to_static = _unavailable("not_to_static")
