//===- ElfCheck.cpp - refuse truncated or foreign artifacts before dlopen -===//
//
// dlopen trusts the file: a truncated library maps segments past its end
// and the process dies of SIGBUS inside the loader. Checking that every
// header and loadable segment lies inside the file turns that into an error.
//
//===----------------------------------------------------------------------===//

#include "ElfCheck.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace kiln::rt {
namespace {
#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = EM_NONE; // not checked
#endif

bool within(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}
} // namespace

bool checkElfFile(const std::string &path, std::string &error) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    error = "cannot open file";
    return false;
  }
  uint64_t size = (uint64_t)in.tellg();
  Elf64_Ehdr eh;
  in.seekg(0);
  if (size < sizeof eh || !in.read(reinterpret_cast<char *>(&eh), sizeof eh) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    error = "not a shared library (no ELF header)";
    return false;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_type != ET_DYN) {
    error = "not a 64-bit little-endian shared library";
    return false;
  }
  if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine) {
    error = "built for another CPU architecture (ELF machine " + std::to_string(eh.e_machine) +
            ")";
    return false;
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      !within(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), size) ||
      (eh.e_shoff && !within(eh.e_shoff, (uint64_t)eh.e_shnum * eh.e_shentsize, size))) {
    error = "truncated or corrupted (headers past the end of the file)";
    return false;
  }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  in.seekg((std::streamoff)eh.e_phoff);
  if (!in.read(reinterpret_cast<char *>(ph.data()), (std::streamsize)(ph.size() * sizeof ph[0]))) {
    error = "truncated (cannot read its program headers)";
    return false;
  }
  for (const Elf64_Phdr &p : ph)
    if ((p.p_type == PT_LOAD || p.p_type == PT_DYNAMIC) && !within(p.p_offset, p.p_filesz, size)) {
      error = "truncated or corrupted (a segment ends past the end of the file)";
      return false;
    }
  return true;
}

} // namespace kiln::rt
