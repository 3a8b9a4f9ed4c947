//===- ElfCheck.h - sanity checks on an artifact file before dlopen -*- C++ -*-===//

#ifndef KILN_LIB_RUNTIME_ELFCHECK_H
#define KILN_LIB_RUNTIME_ELFCHECK_H

#include <string>

namespace kiln::rt {

/// True when `path` is a 64-bit shared library for this machine whose
/// headers and loadable segments lie inside the file; else `error` says why.
bool checkElfFile(const std::string &path, std::string &error);

} // namespace kiln::rt

#endif // KILN_LIB_RUNTIME_ELFCHECK_H
