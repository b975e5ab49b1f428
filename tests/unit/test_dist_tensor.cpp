// The distributed tensor's pure parts (oar/dist_tensor.h): mesh
// coordinates and groups, get_mesh_with_dim, the shard math (uneven and
// empty chunks, a dim split over two mesh dims), local shapes on a 2-d
// mesh, check_placements' sentences, and in one process (a mesh of rank 0
// only) shard_tensor, reshard R -> S, the dispatch of an op and its
// gradient. Two and four ranks: frontends/python/tests/test_dist_eager.py.
#include "oar/dist_tensor.h"
#include "oar/ops.h"
#include "test_util.h"

using oar::DistAttr;
using oar::Placement;
using oar::ProcessMesh;
using oar::Shape;
using oar::Tensor;
using oar_test::error_of;
namespace dist = oar::dist;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ProcessMesh mesh_2x2() { return ProcessMesh({2, 2}, {4, 5, 6, 7}, {"dp", "mp"}); }

}  // namespace

TEST_CASE("ProcessMesh: coordinates, groups and names") {
  ProcessMesh m = mesh_2x2();
  CHECK(m.ndim() == 2);
  CHECK(m.size() == 4);
  CHECK(m.coordinate(4) == std::vector<int64_t>{0, 0});
  CHECK(m.coordinate(6) == std::vector<int64_t>{1, 0});
  CHECK(m.coordinate(7) == std::vector<int64_t>{1, 1});
  CHECK(m.group_along(6, 0) == std::vector<int>{4, 6});  // along dp: same mp coordinate
  CHECK(m.group_along(6, 1) == std::vector<int>{6, 7});
  CHECK(m.dim_of("mp") == 1);
  CHECK(contains(error_of([&] { m.dim_of("pp"); }),
                 "no dim named 'pp'; the mesh's dims are [dp, mp]"));
  CHECK(contains(error_of([&] { m.coordinate(0); }), "rank 0 is not in ProcessMesh(shape=[2, 2]"));
  CHECK(m.contains(5));
  CHECK(!m.contains(3));
  CHECK(m.str() == "ProcessMesh(shape=[2, 2], process_ids=[4, 5, 6, 7], dim_names=[dp, mp])");
  CHECK(ProcessMesh::from_ids({0, 1}).dim_names() == std::vector<std::string>{"d0"});
  // Paddle's equality ignores the dim names.
  CHECK(m == ProcessMesh({2, 2}, {4, 5, 6, 7}, {"a", "b"}));
  CHECK(!(m == ProcessMesh({4}, {4, 5, 6, 7})));
}

TEST_CASE("ProcessMesh: bad shapes, ids and names are sentences") {
  CHECK(contains(error_of([] {
                   ProcessMesh({2, 2}, {0, 1, 2});
                 }),
                 "holds 4 processes but 3 process ids"));
  CHECK(contains(error_of([] { ProcessMesh({2}, {1, 1}); }), "process id 1 appears twice"));
  CHECK(contains(error_of([] { ProcessMesh({2}, {0, -1}); }), "process id -1 is negative"));
  CHECK(contains(error_of([] {
                   ProcessMesh({2}, {0, 1}, {"x", "y"});
                 }),
                 "has 1 dims but 2 dim_names"));
  CHECK(contains(error_of([] { ProcessMesh({1, 2}, {0, 1}, {"x", "x"}); }), "repeat a name"));
}

TEST_CASE("ProcessMesh: get_mesh_with_dim transposes and indexes as Paddle") {
  ProcessMesh m({2, 3}, {0, 1, 2, 3, 4, 5}, {"x", "y"});
  ProcessMesh by_y = m.get_mesh_with_dim("y");
  CHECK(by_y.shape() == Shape{3, 2});
  CHECK(by_y.process_ids() == std::vector<int>{0, 3, 1, 4, 2, 5});
  CHECK(by_y.dim_names() == std::vector<std::string>{"y", "x"});
  ProcessMesh sub = m.get_mesh_with_dim("y", 2);
  CHECK(sub.process_ids() == std::vector<int>{2, 5});
  CHECK(sub.dim_names() == std::vector<std::string>{"x"});
  ProcessMesh row = m.get_mesh_with_dim("x", 1);
  CHECK(row.process_ids() == std::vector<int>{3, 4, 5});
  ProcessMesh one = ProcessMesh::from_ids({0, 1}, "x").get_mesh_with_dim("x", 1);
  CHECK(one.process_ids() == std::vector<int>{1});  // a 1-d mesh of one process
  CHECK(contains(error_of([&] { m.get_mesh_with_dim("x", 2); }),
                 "index 2 is out of range for dim 'x' of size 2"));
}

TEST_CASE("shard math: torch.chunk's ceil chunks, uneven and empty") {
  // 10 over 4: chunks of 3, 3, 3, 1.
  CHECK(dist::shard_begin(10, 4, 0) == 0);
  CHECK(dist::shard_begin(10, 4, 3) == 9);
  CHECK(dist::shard_length(10, 4, 2) == 3);
  CHECK(dist::shard_length(10, 4, 3) == 1);
  // 5 over 4: chunks of 2, 2, 1, 0 (the last rank holds nothing).
  CHECK(dist::shard_length(5, 4, 2) == 1);
  CHECK(dist::shard_length(5, 4, 3) == 0);
  CHECK(dist::shard_begin(5, 4, 3) == 5);
  // 1 over 2: 1, 0.
  CHECK(dist::shard_length(1, 2, 0) == 1);
  CHECK(dist::shard_length(1, 2, 1) == 0);
  int64_t total = 0;
  for (int64_t i = 0; i < 3; ++i) total += dist::shard_length(7, 3, i);
  CHECK(total == 7);
}

TEST_CASE("local_shape on a 2-d mesh, one dim split over both mesh dims, outside the mesh") {
  ProcessMesh m = mesh_2x2();
  DistAttr rows_cols{m, {Placement::Shard(0), Placement::Shard(1)}};
  CHECK(dist::local_shape({5, 6}, rows_cols, 4) == Shape{3, 3});
  CHECK(dist::local_shape({5, 6}, rows_cols, 7) == Shape{2, 3});
  DistAttr dp_only{m, {Placement::Shard(0), Placement::Replicate()}};
  CHECK(dist::local_shape({5, 6}, dp_only, 5) == Shape{3, 6});
  DistAttr partial{m, {Placement::Partial(), Placement::Shard(1)}};
  CHECK(dist::local_shape({5, 6}, partial, 6) == Shape{5, 3});
  // Dim 0 (size 7) split over dp then mp: dp halves are 4 and 3, then 2+2 and 2+1.
  DistAttr both{m, {Placement::Shard(0), Placement::Shard(0)}};
  CHECK(dist::local_shape({7, 2}, both, 4) == Shape{2, 2});
  CHECK(dist::local_shape({7, 2}, both, 5) == Shape{2, 2});
  CHECK(dist::local_shape({7, 2}, both, 6) == Shape{2, 2});
  CHECK(dist::local_shape({7, 2}, both, 7) == Shape{1, 2});
  CHECK(dist::local_shape({7, 2}, both, 0) == Shape{0, 0});  // not in the mesh: an empty piece
}

TEST_CASE("check_placements names the API, the placements and what is wrong") {
  ProcessMesh m = mesh_2x2();
  std::string e =
      error_of([&] { dist::check_placements("shard_tensor of x", m, {Placement::Shard(0)}, 2); });
  CHECK(contains(e, "shard_tensor of x: placements [Shard(0)] give 1 placements but the mesh"));
  CHECK(contains(e, "has 2 dims"));
  e = error_of([&] {
    dist::check_placements("matmul's input 1", m, {Placement::Shard(2), Placement::Replicate()}, 2);
  });
  CHECK(contains(e,
                 "matmul's input 1: placements [Shard(2), Replicate()] shard dim 2 but the tensor "
                 "has 2 dims"));
  CHECK(error_of([&] {
          dist::check_placements("ok", m, {Placement::Partial(), Placement::Shard(1)}, 2);
        }).empty());
}

TEST_CASE(
    "one process: shard_tensor, dtensor_from_local, R -> S, a dispatched op and its gradient") {
  ProcessMesh m = ProcessMesh::from_ids({0}, "x");
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad();
  Tensor d = dist::shard_tensor(x, m, {Placement::Shard(1)});
  CHECK(dist::is_dist(d));
  CHECK(d.shape() == Shape{2, 3});
  CHECK(d.is_leaf());
  CHECK(d.requires_grad());
  CHECK(dist::local_value(d).to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(contains(error_of([&] {
                   dist::shard_tensor(x, ProcessMesh::from_ids({0, 1}), {Placement::Shard(0)});
                 }),
                 "names process 1 but the job has 1 process"));
  // A dispatched op: the global shape, a distributed output, one node.
  Tensor y = oar::multiply(d, d);
  CHECK(dist::is_dist(y));
  CHECK(y.shape() == Shape{2, 3});
  Tensor loss = oar::sum(y, {}, false);
  CHECK(dist::is_dist(loss));
  loss.backward();
  Tensor g = d.grad();
  REQUIRE(dist::is_dist(g));
  CHECK(dist::dist_attr(g) == dist::dist_attr(d));  // resharded to the leaf's placements
  CHECK(dist::local_value(g).to_vector<float>() == std::vector<float>{2, 4, 6, 8, 10, 12});
  CHECK(!x.grad().defined());  // d is a new leaf
  Tensor r = dist::reshard(dist::shard_tensor(x.detach(), m, {Placement::Replicate()}), m,
                           {Placement::Shard(0)});
  CHECK(dist::dist_attr(r).placements == std::vector<Placement>{Placement::Shard(0)});
  Tensor l = dist::dtensor_from_local(Tensor::from_vector(std::vector<float>{1, 2}, {2}), m,
                                      {Placement::Shard(0)});
  CHECK(l.shape() == Shape{2});
  CHECK(dist::unshard(l).to_vector<float>() == std::vector<float>{1, 2});
}

TEST_CASE("dispatch: two meshes in one op name the op, both tensors and both meshes") {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2}, {2});
  Tensor a = dist::shard_tensor(x, ProcessMesh::from_ids({0}, "x"), {Placement::Shard(0)});
  Tensor b = dist::shard_tensor(x, ProcessMesh({1, 1}, {0}, {"x", "y"}),
                                {Placement::Replicate(), Placement::Replicate()});
  std::string e = error_of([&] { oar::add(a, b); });
  CHECK(contains(
      e, "add: add's input 0 (shape [2], placements [Shard(0)]) is on ProcessMesh(shape=[1]"));
  CHECK(contains(e,
                 "add's input 1 (shape [2], placements [Replicate(), Replicate()]) is on "
                 "ProcessMesh(shape=[1, 1]"));
  CHECK(contains(e, "reshard one of them first"));
  // A dense input counts as Replicate() on the op's mesh.
  Tensor c = oar::add(a, x);
  CHECK(dist::dist_attr(c).mesh == ProcessMesh::from_ids({0}, "x"));
  CHECK(dist::unshard(c).to_vector<float>() == std::vector<float>{2, 4});
}

TEST_CASE("backward: AutogradMeta::grad_placements places a distributed leaf's gradient") {
  ProcessMesh m = ProcessMesh::from_ids({0}, "x");
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}).set_requires_grad();
  Tensor w = dist::shard_tensor(x, m, {Placement::Replicate()});
  w.impl().autograd->grad_placements = {Placement::Shard(0)};
  oar::sum(oar::multiply(w, w)).backward();
  REQUIRE(dist::is_dist(w.grad()));
  CHECK(dist::dist_attr(w.grad()).placements == std::vector<Placement>{Placement::Shard(0)});
  CHECK(dist::local_value(w.grad()).to_vector<float>() == std::vector<float>{2, 4, 6, 8});
}

TEST_CASE("a distributed tensor's values are read through its piece, never its missing storage") {
  Tensor d = dist::shard_tensor(Tensor::from_vector(std::vector<float>{1, 2}, {2}), ProcessMesh::from_ids({0}, "x"),
                                {Placement::Shard(0)});
  CHECK(contains(error_of([&] { d.to_vector<float>(); }), "distributed tensor (global shape [2])"));
  CHECK(d.host_data() == nullptr);
  CHECK(contains(d.str(), "Tensor(shape=[2], mesh=ProcessMesh(shape=[1], process_ids=[0], dim_names=[x]), "
                          "placements=[Shard(0)], local=Tensor(shape=[2]"));
}
