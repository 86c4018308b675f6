#include "python_store.hpp"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace chorus::python {
namespace {

Status failure(const char* what, const std::string& key, nb::python_error& e) {
  return remoteError(std::string("the Python store's ") + what + "('" + key + "') raised: " + e.what());
}

}  // namespace

PythonStore::~PythonStore() {
  nb::gil_scoped_acquire gil;  // the last reference may be dropped on one of chorus's threads
  store_.reset();
}

Status PythonStore::set(const std::string& key, const std::string& value) {
  nb::gil_scoped_acquire gil;
  try {
    store_.attr("set")(key, nb::bytes(value.data(), value.size()));
    return Status::ok();
  } catch (nb::python_error& e) {
    return failure("set", key, e);
  }
}

Status PythonStore::tryGet(const std::string& key, std::string* value, bool* found) {
  nb::gil_scoped_acquire gil;
  try {
    // torch's stores block in get() until the key exists: ask check() first where the store has it.
    *found = true;
    if (nb::hasattr(store_, "check")) {
      nb::list keys;
      keys.append(key);
      *found = nb::cast<bool>(store_.attr("check")(keys));
    }
    if (!*found) return Status::ok();
    nb::object v = store_.attr("get")(key);
    *found = !v.is_none();
    if (*found) {
      nb::bytes b = nb::cast<nb::bytes>(v);
      value->assign(b.c_str(), b.size());
    }
    return Status::ok();
  } catch (nb::python_error& e) {
    if (e.matches(PyExc_KeyError)) {
      *found = false;
      return Status::ok();
    }
    return failure("get", key, e);
  } catch (nb::cast_error&) {
    return remoteError("the Python store's get('" + key + "') returned neither bytes nor None");
  }
}

Status PythonStore::add(const std::string& key, int64_t delta, int64_t* result) {
  nb::gil_scoped_acquire gil;
  try {
    *result = nb::cast<int64_t>(store_.attr("add")(key, delta));
    return Status::ok();
  } catch (nb::python_error& e) {
    return failure("add", key, e);
  } catch (nb::cast_error&) {
    return remoteError("the Python store's add('" + key + "') returned no integer");
  }
}

Status PythonStore::setIfAbsent(const std::string& key, const std::string& value, std::string* stored) {
  nb::gil_scoped_acquire gil;
  if (!nb::hasattr(store_, "compare_set")) return Store::setIfAbsent(key, value, stored);
  try {
    nb::bytes now =
        nb::cast<nb::bytes>(store_.attr("compare_set")(key, nb::bytes(""), nb::bytes(value.data(), value.size())));
    stored->assign(now.c_str(), now.size());
    return Status::ok();
  } catch (nb::python_error& e) {
    return failure("compare_set", key, e);
  } catch (nb::cast_error&) {
    return remoteError("the Python store's compare_set('" + key + "') returned no bytes");
  }
}

}  // namespace chorus::python
