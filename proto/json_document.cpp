#include "proto/json_document.h"

#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::proto {
namespace {

// Below this many keys a linear scan finds a repeated key faster than hashing would.
constexpr std::size_t kIndexFrom = 16;

// Builds the DOM from the parser's events. The open containers form a stack; nothing
// is added to a container while one of its children is open, so the pointers into
// it stay valid.
class DocumentBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit DocumentBuilder(Json& root) : root_(root) {}

  std::string error;

  bool null() override { return put(nullptr) != nullptr; }
  bool boolean(bool value) override { return put(value) != nullptr; }
  bool number_integer(number_integer_t value) override { return put(value) != nullptr; }
  bool number_unsigned(number_unsigned_t value) override { return put(value) != nullptr; }
  bool number_float(number_float_t value, const string_t&) override { return put(value) != nullptr; }
  bool string(string_t& value) override { return put(std::move(value)) != nullptr; }
  bool binary(binary_t& value) override { return put(Json::binary(std::move(value))) != nullptr; }

  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& name) override {
    Frame& frame = open_.back();
    Json::object_t& object = frame.node->get_ref<Json::object_t&>();
    frame.slot = find(frame, object, name);
    if (frame.slot == nullptr) {
      if (!frame.index.empty()) frame.index.emplace(name, object.size());
      object.emplace_back(std::move(name), nullptr);
      frame.slot = &object.back().second;
      if (frame.index.empty() && object.size() >= kIndexFrom) {
        for (std::size_t i = 0; i < object.size(); ++i) frame.index.emplace(object.begin()[i].first, i);
      }
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    // ex.what(): "[json.exception.parse_error.101] parse error at line 1, column 9: ..."
    std::string what = ex.what();
    const auto bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    error = "We could not parse the JSON body of your request (byte " + std::to_string(position) + "): " + what;
    return false;
  }

 private:
  struct Frame {
    Json* node;
    Json* slot = nullptr;  // an object's: where the value of the key just read goes
    std::unordered_map<std::string, std::size_t> index{};  // an object's keys, once it is large
  };

  static Json* find(Frame& frame, Json::object_t& object, const std::string& name) {
    if (!frame.index.empty()) {
      const auto it = frame.index.find(name);
      return it == frame.index.end() ? nullptr : &object.begin()[it->second].second;
    }
    for (auto& [existing, value] : object) {
      if (existing == name) return &value;
    }
    return nullptr;
  }

  // Stores a value where the parser is (the root, the next array element, or the
  // value of the key just read) and returns where it went.
  template <class Value>
  Json* put(Value&& value) {
    if (open_.empty()) {
      root_ = Json(std::forward<Value>(value));
      return &root_;
    }
    Frame& frame = open_.back();
    if (frame.node->is_array()) {
      Json::array_t& array = frame.node->get_ref<Json::array_t&>();
      array.emplace_back(std::forward<Value>(value));
      return &array.back();
    }
    *frame.slot = Json(std::forward<Value>(value));
    return frame.slot;
  }

  bool open(Json container) {
    Json* node = put(std::move(container));
    open_.push_back(Frame{node});
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  Json& root_;
  std::vector<Frame> open_;
};

}  // namespace

bool parse_json_document(std::string_view text, Json& out, std::string& error) {
  out = Json();
  DocumentBuilder builder(out);
  if (Json::sax_parse(text.begin(), text.end(), &builder)) return true;
  error = builder.error.empty() ? "We could not parse the JSON body of your request." : builder.error;
  out = Json();
  return false;
}

}  // namespace sluice::proto
