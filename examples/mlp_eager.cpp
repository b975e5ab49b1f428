// A small MLP run with eager ops on the default device (or $OAR_DEVICE):
// 4 -> 16 -> 16 -> 3 with GELU and layer_norm, softmax output.
#include <cstdio>
#include <iostream>

#include "oar/oar.h"

int main() {
  try {
    oar::Device device = oar::default_device();
    oar::DeviceInfo info = oar::Runtime::global().device_info(device);
    std::cout << "oar eager MLP on " << device.str() << " (" << info.name << ")\n";

    oar::seed(2026);
    auto param = [&](oar::Shape shape, double scale) { return oar::normal(shape, 0.0, scale, oar::DType::f32, device); };
    oar::Tensor w1 = param({4, 16}, 0.5), b1 = oar::zeros({16}, oar::DType::f32, device);
    oar::Tensor w2 = param({16, 16}, 0.25), b2 = oar::zeros({16}, oar::DType::f32, device);
    oar::Tensor w3 = param({16, 3}, 0.25), b3 = oar::zeros({3}, oar::DType::f32, device);

    oar::Tensor x = oar::Tensor::from_vector<float>(
        {0.1f, 0.2f, 0.3f, 0.4f, -1.0f, 0.5f, 2.0f, 0.0f, 3.0f, -2.0f, 1.0f, 0.5f}, {3, 4}, device);
    oar::Tensor h = oar::gelu(oar::linear(x, w1, b1));
    h = oar::layer_norm(h, oar::Tensor(), oar::Tensor());
    h = oar::silu(oar::linear(h, w2, b2));
    oar::Tensor probs = oar::softmax(oar::linear(h, w3, b3), -1);

    std::vector<float> p = probs.to_vector<float>();
    std::vector<int64_t> cls = oar::argmax(probs, -1).to_vector<int64_t>();
    for (int r = 0; r < 3; ++r) {
      std::printf("  sample %d: probs [%.4f, %.4f, %.4f] -> class %lld\n", r, p[r * 3], p[r * 3 + 1], p[r * 3 + 2],
                  static_cast<long long>(cls[static_cast<size_t>(r)]));
    }
    std::cout << "  row sums: " << oar::sum(probs, {-1}).str() << "\n";
    oar::AllocatorStats stats = oar::Runtime::global().allocator_stats(device);
    std::cout << "  allocator on " << device.str() << ": peak " << stats.peak_allocated << " bytes, reserved "
              << stats.reserved << " bytes, " << stats.num_device_mallocs << " device mallocs\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "mlp_eager: " << e.what() << "\n";
    return 1;
  }
}
