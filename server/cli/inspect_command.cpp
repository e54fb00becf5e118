#include "server/cli/inspect_command.h"

#include <cstdio>
#include <exception>
#include <map>

#include "server/services/register_model.h"
#include "server/services/model_prepare.h"

namespace sluice::server {

int run_inspect(const std::string& path, bool show_tensors) {
  try {
    auto file = loader::GgufFile::open(path);
    std::printf("%s: GGUF v%u, %zu metadata keys, %zu tensors, alignment %u, %llu bytes\n",
                path.c_str(), file.version(), file.metadata().size(), file.tensors().size(),
                file.alignment(), static_cast<unsigned long long>(file.file_size()));
    for (const auto& entry : file.metadata()) {
      std::printf("  %-44s %-14s %s\n", entry.key.c_str(), entry.value.type_name().c_str(),
                  entry.value.to_display_string().c_str());
    }
    std::map<std::string_view, size_t> tensors_by_type;
    for (const auto& tensor : file.tensors()) {
      ++tensors_by_type[backends::dtype_name(tensor.dtype)];
      if (!show_tensors) continue;
      std::string shape;
      for (auto dim : tensor.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(dim);
      std::printf("  tensor %-40s %-6s [%s] %llu bytes\n", tensor.name.c_str(),
                  std::string(backends::dtype_name(tensor.dtype)).c_str(), shape.c_str(),
                  static_cast<unsigned long long>(tensor.num_bytes));
    }
    std::printf("tensor types:");
    for (const auto& [name, count] : tensors_by_type)
      std::printf(" %s=%zu", std::string(name).c_str(), count);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  try {
    config::ModelConfig model;
    model.path = path;
    auto loaded = server::register_model(model);
    // What serve does next, on the CPU: build the tokenizer, bind every weight,
    // render the chat template. A file that fails here is not servable.
    const PreparedModel prepared = prepare_model(loaded, "cpu", 1);
    std::printf("servable: %s (%s, %s, %llu parameters, context %lld)\n", loaded.info.id.c_str(),
                loaded.info.architecture.c_str(), loaded.info.file_type.c_str(),
                static_cast<unsigned long long>(loaded.info.num_parameters),
                static_cast<long long>(loaded.info.context_length));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not servable: %s\n", e.what());
    return 1;
  }
}

}  // namespace sluice::server
