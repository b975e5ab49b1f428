// _C.distributed: communicators over a device's collectives, work handles.
// Collectives release the GIL while they run or wait; a Work keeps the
// Python tensors it was given alive until it is waited for.
#include "binding.h"

#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include "oar/distributed.h"

namespace oar_py {

namespace {

using oar::distributed::Communicator;
using oar::distributed::WorkPtr;

/// A Work and the Python objects it keeps alive.
struct PyWork {
  WorkPtr work;
  py::object keep;  // the tensors (a tuple), dropped once waited for
};

const oar::Tensor& tensor_of(const py::object& obj, const char* op, const char* role) {
  try {
    return obj.cast<const oar::Tensor&>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(op) + ": the " + role + " must be an oar Tensor, not " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  }
}

oar::distributed::ReduceOp reduce_op(int op, const char* name) {
  if (op < 0 || op > 4)
    throw py::value_error(std::string(name) + ": op " + std::to_string(op) +
                          " is not one of 0 sum, 1 prod, 2 max, 3 min, 4 avg");
  return static_cast<oar::distributed::ReduceOp>(op);
}

// Live communicators, destroyed at interpreter exit (before the runtime
// unloads the plugins) when the program did not.
std::mutex g_live_mu;
std::vector<std::weak_ptr<Communicator>> g_live;

void destroy_live() {
  std::vector<std::shared_ptr<Communicator>> live;
  {
    std::lock_guard<std::mutex> lock(g_live_mu);
    for (auto& w : g_live)
      if (auto c = w.lock()) live.push_back(std::move(c));
    g_live.clear();
  }
  py::gil_scoped_release release;
  for (auto& c : live) c->destroy();
}

int64_t timeout_ms_of(double seconds) { return seconds < 0 ? -1 : static_cast<int64_t>(std::llround(seconds * 1000.0)); }

// Issues with the GIL released; waits too unless async_op.
template <typename F>
PyWork issue(F&& start, py::tuple keep, bool async_op) {
  WorkPtr work;
  {
    py::gil_scoped_release release;
    if (async_op) {
      work = start();
    } else {
      oar::distributed::SyncScope sync;  // cpu may run it on this thread
      work = start();
      work->wait();
    }
  }
  return PyWork{std::move(work), async_op ? py::object(std::move(keep)) : py::object(py::none())};
}

}  // namespace

void bind_distributed(py::module_& m) {
  py::module_ dist = m.def_submodule("distributed", "collective communication (oar.distributed's engine)");
  bind_stores(dist);
  bind_dist_env(dist);

  py::class_<PyWork>(dist, "Work", "A collective in flight (the task of an async_op / sync_op=False call).")
      .def(
          "wait",
          [](PyWork& w, std::optional<double> timeout) {
            {
              py::gil_scoped_release release;
              w.work->wait(timeout ? timeout_ms_of(*timeout) : -1);
            }
            w.keep = py::none();
            return true;
          },
          py::arg("timeout") = py::none(),
          "Waits (timeout in seconds; None: the communicator's) and raises the collective's error.")
      .def("is_completed", [](PyWork& w) { return w.work->is_completed(); })
      .def_property_readonly("description", [](PyWork& w) { return w.work->description(); });

  py::class_<Communicator, std::shared_ptr<Communicator>>(dist, "Communicator",
                                                          "This rank's communicator of a group.")
      .def(py::init([](std::shared_ptr<oar::Store> store, const std::string& device, int nranks, int rank,
                       const std::string& key, double timeout, const std::string& name,
                       std::vector<int> global_ranks, int check) {
             if (!store) throw py::value_error("Communicator: store is None");
             oar::distributed::CommOptions opts;
             opts.name = name;
             opts.global_ranks = std::move(global_ranks);
             opts.check = check;
             oar::Device d = oar::parse_device(device);
             std::shared_ptr<Communicator> comm;
             {
               py::gil_scoped_release release;
               comm = std::make_shared<Communicator>(d, nranks, rank, *store, key, timeout_ms_of(timeout), opts);
             }
             std::lock_guard<std::mutex> lock(g_live_mu);
             std::erase_if(g_live, [](const std::weak_ptr<Communicator>& w) { return w.expired(); });
             g_live.push_back(comm);
             return comm;
           }),
           py::arg("store"), py::arg("device"), py::arg("nranks"), py::arg("rank"), py::arg("key") = "oar/comm",
           py::arg("timeout") = -1.0, py::arg("name") = "world", py::arg("global_ranks") = std::vector<int>{},
           py::arg("check") = -1, py::keep_alive<1, 2>())
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("nranks", &Communicator::nranks)
      .def_property_readonly("name", &Communicator::name)
      .def_property_readonly("key", &Communicator::key)
      .def_property_readonly("global_ranks", &Communicator::global_ranks)
      .def_property_readonly("device", [](const Communicator& c) { return device_string(c.device()); })
      .def_property_readonly("timeout", [](const Communicator& c) { return double(c.timeout_ms()) / 1000.0; })
      .def(
          "all_reduce",
          [](Communicator& c, py::object t, int op, bool async_op) {
            const oar::Tensor& x = tensor_of(t, "all_reduce", "tensor");
            auto r = reduce_op(op, "all_reduce");
            return issue([&] { return c.all_reduce_async(x, r); }, py::make_tuple(t), async_op);
          },
          py::arg("tensor"), py::arg("op") = 0, py::arg("async_op") = false)
      .def(
          "all_gather",
          [](Communicator& c, py::object out, py::object t, bool async_op) {
            const oar::Tensor& o = tensor_of(out, "all_gather", "out");
            const oar::Tensor& x = tensor_of(t, "all_gather", "tensor");
            return issue([&] { return c.all_gather_async(o, x); }, py::make_tuple(out, t), async_op);
          },
          py::arg("out"), py::arg("tensor"), py::arg("async_op") = false)
      .def(
          "reduce_scatter",
          [](Communicator& c, py::object out, py::object t, int op, bool async_op) {
            const oar::Tensor& o = tensor_of(out, "reduce_scatter", "out");
            const oar::Tensor& x = tensor_of(t, "reduce_scatter", "tensor");
            auto r = reduce_op(op, "reduce_scatter");
            return issue([&] { return c.reduce_scatter_async(o, x, r); }, py::make_tuple(out, t), async_op);
          },
          py::arg("out"), py::arg("tensor"), py::arg("op") = 0, py::arg("async_op") = false)
      .def(
          "broadcast",
          [](Communicator& c, py::object t, int root, bool async_op) {
            const oar::Tensor& x = tensor_of(t, "broadcast", "tensor");
            return issue([&] { return c.broadcast_async(x, root); }, py::make_tuple(t), async_op);
          },
          py::arg("tensor"), py::arg("root"), py::arg("async_op") = false)
      .def(
          "reduce",
          [](Communicator& c, py::object t, int root, int op, bool async_op) {
            const oar::Tensor& x = tensor_of(t, "reduce", "tensor");
            auto r = reduce_op(op, "reduce");
            return issue([&] { return c.reduce_async(x, root, r); }, py::make_tuple(t), async_op);
          },
          py::arg("tensor"), py::arg("root"), py::arg("op") = 0, py::arg("async_op") = false)
      .def(
          "scatter",
          [](Communicator& c, py::object out, py::object t, int root, bool async_op) {
            const oar::Tensor& o = tensor_of(out, "scatter", "out");
            oar::Tensor x = t.is_none() ? oar::Tensor() : tensor_of(t, "scatter", "tensor");
            return issue([&] { return c.scatter_async(o, x, root); }, py::make_tuple(out, t), async_op);
          },
          py::arg("out"), py::arg("tensor"), py::arg("root"), py::arg("async_op") = false)
      .def(
          "all_to_all",
          [](Communicator& c, py::object out, py::object t, bool async_op) {
            const oar::Tensor& o = tensor_of(out, "all_to_all", "out");
            const oar::Tensor& x = tensor_of(t, "all_to_all", "tensor");
            return issue([&] { return c.all_to_all_async(o, x); }, py::make_tuple(out, t), async_op);
          },
          py::arg("out"), py::arg("tensor"), py::arg("async_op") = false)
      .def(
          "all_to_all_v",
          [](Communicator& c, py::object out, py::object t, std::vector<int64_t> out_counts,
             std::vector<int64_t> in_counts, bool async_op) {
            const oar::Tensor& o = tensor_of(out, "all_to_all_v", "out");
            const oar::Tensor& x = tensor_of(t, "all_to_all_v", "tensor");
            return issue([&] { return c.all_to_all_v_async(o, x, out_counts, in_counts); }, py::make_tuple(out, t),
                         async_op);
          },
          py::arg("out"), py::arg("tensor"), py::arg("out_counts"), py::arg("in_counts"), py::arg("async_op") = false)
      .def(
          "send",
          [](Communicator& c, py::object t, int peer, bool async_op) {
            const oar::Tensor& x = tensor_of(t, "send", "tensor");
            return issue([&] { return c.send_async(x, peer); }, py::make_tuple(t), async_op);
          },
          py::arg("tensor"), py::arg("peer"), py::arg("async_op") = false)
      .def(
          "recv",
          [](Communicator& c, py::object t, int peer, bool async_op) {
            const oar::Tensor& x = tensor_of(t, "recv", "tensor");
            return issue([&] { return c.recv_async(x, peer); }, py::make_tuple(t), async_op);
          },
          py::arg("tensor"), py::arg("peer"), py::arg("async_op") = false)
      .def("barrier", [](Communicator& c) {
        py::gil_scoped_release release;
        c.barrier();
      })
      .def("destroy", [](Communicator& c) {
        py::gil_scoped_release release;
        c.destroy();
      }, "Waits for pending work (bounded by the timeout) and destroys; idempotent.");
  py::module_::import("atexit").attr("register")(py::cpp_function(&destroy_live));
}

}  // namespace oar_py
