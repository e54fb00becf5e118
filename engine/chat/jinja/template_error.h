#pragma once
// The errors of chat-template compilation and rendering.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace sluice::chat {

// Where in the template source something is: 1-based line and column (bytes).
struct SourcePos {
  uint32_t line = 1;
  uint32_t column = 1;
};

// Base of every chat-template error. Templates are compiled when a model loads and
// rendered per request (outside the engine's step loop), so errors travel as
// exceptions; the caller turns a render error into a 400/500 response.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error at a place in the template source. what(): "line L, column C: <reason>".
class PositionedTemplateError : public TemplateError {
 public:
  PositionedTemplateError(SourcePos pos, const std::string& reason)
      : TemplateError("line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": " +
                      reason),
        pos_(pos),
        reason_(reason) {}
  SourcePos pos() const { return pos_; }
  const std::string& reason() const { return reason_; }

 private:
  SourcePos pos_;
  std::string reason_;
};

// The source does not parse, or uses something this interpreter does not have.
class TemplateSyntaxError : public PositionedTemplateError {
 public:
  using PositionedTemplateError::PositionedTemplateError;
};

// Rendering failed: a type error, an undefined value used, a limit reached.
class TemplateRenderError : public PositionedTemplateError {
 public:
  using PositionedTemplateError::PositionedTemplateError;
};

// The template called raise_exception(message): it refuses this conversation (for
// example, roles that do not alternate). what() is the template's message, verbatim,
// so it can go back to the client.
class TemplateRaisedError : public TemplateError {
 public:
  explicit TemplateRaisedError(const std::string& message) : TemplateError(message) {}
};

// Thrown by builtins, which do not know where they were called from; the evaluator
// rethrows it as a TemplateRenderError at the call's position.
class BuiltinError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sluice::chat
