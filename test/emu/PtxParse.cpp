//===- PtxParse.cpp - PTX text to decoded instructions --------------------===//
//
// The subset the NVPTX back end writes: module directives, .global
// constants, .shared variables (entry-level, module-level and the extern
// dynamic one), .visible .entry bodies with labels, guards, vector and
// address operands, and inline-asm scopes ({ .reg .pred p; ... }).
// Device functions (.func) are skipped: Kiln's kernels call none.
//
//===----------------------------------------------------------------------===//

#include "Ptx.h"

#include <cstdio>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace kiln::emu {
namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> splitTopLevel(const std::string &s, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '{' || c == '[' || c == '(')
      ++depth;
    if (c == '}' || c == ']' || c == ')')
      --depth;
    if (c == sep && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty())
    out.push_back(trim(cur));
  return out;
}

bool typeOf(const std::string &t, Ty &ty) {
  static const std::map<std::string, Ty> types = {
      {"b8", Ty::B8},   {"b16", Ty::B16}, {"b32", Ty::B32}, {"b64", Ty::B64},
      {"u8", Ty::U8},   {"u16", Ty::U16}, {"u32", Ty::U32}, {"u64", Ty::U64},
      {"s8", Ty::S8},   {"s16", Ty::S16}, {"s32", Ty::S32}, {"s64", Ty::S64},
      {"f16", Ty::F16}, {"bf16", Ty::BF16}, {"f32", Ty::F32}, {"f64", Ty::F64},
      {"pred", Ty::Pred}, {"f16x2", Ty::F16x2}, {"bf16x2", Ty::BF16x2}, {"tf32", Ty::TF32}};
  auto it = types.find(t);
  if (it == types.end())
    return false;
  ty = it->second;
  return true;
}

uint32_t typeBytes(Ty t) {
  switch (t) {
  case Ty::B8: case Ty::U8: case Ty::S8: return 1;
  case Ty::B16: case Ty::U16: case Ty::S16: case Ty::F16: case Ty::BF16: return 2;
  case Ty::B64: case Ty::U64: case Ty::S64: case Ty::F64: return 8;
  default: return 4;
  }
}

// Comparison codes shared with PtxExec.cpp.
const std::map<std::string, uint8_t> &comparisons() {
  static const std::map<std::string, uint8_t> c = {
      {"eq", 1},  {"ne", 2},  {"lt", 3},  {"le", 4},  {"gt", 5},  {"ge", 6},
      {"lo", 3},  {"ls", 4},  {"hi", 5},  {"hs", 6},  {"equ", 7}, {"neu", 8},
      {"ltu", 9}, {"leu", 10}, {"gtu", 11}, {"geu", 12}, {"num", 13}, {"nan", 14}};
  return c;
}

struct Parser {
  Parser(Module &mod, std::string &error) : mod(mod), error(error) {}
  Module &mod;
  std::string &error;
  int line = 0;
  // Module-level names.
  std::map<std::string, uint64_t> globals; // name -> host address
  std::map<std::string, std::pair<uint32_t, uint32_t>> moduleShared; // name -> size, align
  std::map<std::string, uint32_t> dynamicShared;                    // name -> align

  bool fail(const std::string &msg) {
    if (error.empty())
      error = "line " + std::to_string(line) + ": " + msg;
    return false;
  }

  // Per entry.
  Entry *entry = nullptr;
  std::unordered_map<std::string, int> regs;
  std::map<std::string, uint32_t> shared, locals;
  std::map<std::string, int> labels;
  std::map<std::string, std::pair<uint32_t, uint32_t>> callParams; // offset, size
  struct Call { Entry *caller; size_t inst; std::string callee; };
  std::vector<Call> calls;
  // `scope`: the inline-asm scope it was written in (0: none), whose own
  // labels come first (each asm block that loops has its own LAB_WAIT).
  struct Pending { size_t inst; std::vector<int> path; std::string name; int scope = 0; };
  std::vector<int> scopeIds;
  int scopeSerial = 0;
  std::vector<Pending> pending;

  int reg(const std::string &name) {
    auto [it, added] = regs.emplace(name, (int)regs.size());
    return it->second;
  }

  bool parseImm(const std::string &s, int64_t &v) {
    if (s.size() == 10 && (s[0] == '0') && (s[1] == 'f' || s[1] == 'F')) {
      v = (int64_t)std::stoull(s.substr(2), nullptr, 16);
      return true;
    }
    if (s.size() == 18 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D')) {
      v = (int64_t)std::stoull(s.substr(2), nullptr, 16);
      return true;
    }
    std::string t = s;
    if (!t.empty() && (t.back() == 'U' || t.back() == 'u'))
      t.pop_back();
    if (t.empty() || !(std::isdigit((unsigned char)t[0]) || t[0] == '-'))
      return false;
    try {
      size_t used = 0;
      if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
        v = (int64_t)std::stoull(t.substr(2), &used, 16), used += 2;
      else if (t[0] == '-')
        v = std::stoll(t, &used, 10);
      else
        v = (int64_t)std::stoull(t, &used, 10);
      return used == t.size();
    } catch (...) {
      return false;
    }
  }

  bool parseOperand(const std::string &text, Operand &o, size_t inst, std::vector<int> path) {
    std::string s = trim(text);
    if (s.empty())
      return fail("empty operand");
    if (s[0] == '{') {
      o.kind = Operand::Vec;
      auto parts = splitTopLevel(s.substr(1, s.size() - 2), ',');
      o.elems.resize(parts.size());
      for (size_t i = 0; i < parts.size(); ++i) {
        auto p = path;
        p.push_back((int)i);
        if (parts[i] == "_") {
          o.elems[i].kind = Operand::Reg;
          o.elems[i].reg = reg("_");
        } else if (!parseOperand(parts[i], o.elems[i], inst, p)) {
          return false;
        }
      }
      return true;
    }
    if (s[0] == '[') {
      o.kind = Operand::Addr;
      std::string in = trim(s.substr(1, s.size() - 2));
      // A tensor map and coordinates: [%map, {%c0, %c1, ...}].
      if (size_t brace = in.find('{'); brace != std::string::npos) {
        size_t comma = in.find(',');
        Operand coords;
        if (comma > brace || !parseOperand(in.substr(brace), coords, inst, path))
          return fail("bad tensor operand '" + s + "'");
        o.elems = std::move(coords.elems);
        in = trim(in.substr(0, comma));
      }
      size_t plus = in.find('+');
      std::string base = trim(in.substr(0, plus));
      if (plus != std::string::npos && !parseImm(trim(in.substr(plus + 1)), o.imm))
        return fail("bad address offset in '" + s + "'");
      if (base[0] == '%') {
        o.reg = reg(base);
      } else if (int64_t v; parseImm(base, v)) {
        o.imm += v;
      } else {
        pending.push_back({inst, path, base});
      }
      return true;
    }
    if (size_t bar = s.find('|'); bar != std::string::npos) {
      o.kind = Operand::Reg;
      o.reg = reg(trim(s.substr(0, bar)));
      o.reg2 = reg(trim(s.substr(bar + 1)));
      return true;
    }
    if (s == "_") { // a sink (mbarrier.arrive's state on another block)
      o.kind = Operand::None;
      return true;
    }
    if (s[0] == '!') {
      o.kind = Operand::Reg;
      o.neg = true;
      o.reg = reg(s.substr(1));
      return true;
    }
    if (s[0] == '%') {
      static const std::map<std::string, Sreg> specials = {
          {"%tid.x", Sreg::TidX},     {"%tid.y", Sreg::TidY},     {"%tid.z", Sreg::TidZ},
          {"%ntid.x", Sreg::NtidX},   {"%ntid.y", Sreg::NtidY},   {"%ntid.z", Sreg::NtidZ},
          {"%ctaid.x", Sreg::CtaX},   {"%ctaid.y", Sreg::CtaY},   {"%ctaid.z", Sreg::CtaZ},
          {"%nctaid.x", Sreg::NctaX}, {"%nctaid.y", Sreg::NctaY}, {"%nctaid.z", Sreg::NctaZ},
          {"%laneid", Sreg::Lane},    {"%warpid", Sreg::Warp},
          {"%cluster_ctarank", Sreg::ClusterRank}, {"%cluster_nctarank", Sreg::ClusterSize}};
      auto it = specials.find(s);
      if (it != specials.end()) {
        o.kind = Operand::Special;
        o.imm = (int64_t)it->second;
        return true;
      }
      if (s.find('.') != std::string::npos)
        return fail("unsupported special register " + s);
      o.kind = Operand::Reg;
      o.reg = reg(s);
      return true;
    }
    if (parseImm(s, o.imm)) {
      o.kind = Operand::Imm;
      return true;
    }
    if (auto it = regs.find(s); it != regs.end()) {
      o.kind = Operand::Reg;
      o.reg = it->second;
      return true;
    }
    // A name: a label, a variable's address, a parameter. Resolved when
    // the body is complete (labels may come later).
    o.kind = Operand::Imm;
    pending.push_back({inst, path, s});
    return true;
  }

  bool resolve() {
    // Dynamic shared memory starts after the static variables.
    for (auto &p : pending) {
      Operand *o = &entry->code[p.inst].ops[p.path[0]];
      for (size_t i = 1; i < p.path.size(); ++i)
        o = &o->elems[p.path[i]];
      const std::string &n = p.name;
      auto it = p.scope ? labels.find(n + "@" + std::to_string(p.scope)) : labels.end();
      if (it == labels.end())
        it = labels.find(n);
      if (it != labels.end()) {
        o->kind = Operand::Label;
        o->imm = it->second;
        continue;
      }
      bool found = false;
      for (const Param &pa : entry->params)
        if (pa.name == n) {
          o->imm += pa.offset;
          found = true;
        }
      if (found)
        continue;
      if (auto it = callParams.find(n); it != callParams.end()) {
        o->imm += it->second.first;
        continue;
      }
      if (n == "func_retval0" && entry->retOffset >= 0) {
        o->imm += entry->retOffset;
        continue;
      }
      if (auto it = shared.find(n); it != shared.end()) {
        o->imm += it->second;
        continue;
      }
      if (auto it = moduleShared.find(n); it != moduleShared.end()) {
        uint32_t at = (entry->staticShared + it->second.second - 1) / it->second.second *
                      it->second.second;
        shared[n] = at;
        entry->staticShared = at + it->second.first;
        o->imm += at;
        continue;
      }
      if (auto it = dynamicShared.find(n); it != dynamicShared.end()) {
        // Placed after every static variable: fixed up below.
        o->imm += 1ll << 40;
        entry->dynamicAlign = std::max(entry->dynamicAlign, it->second);
        continue;
      }
      if (auto it = locals.find(n); it != locals.end()) {
        o->kind = o->kind == Operand::Addr ? Operand::Addr : Operand::Local;
        o->imm += it->second;
        if (o->kind == Operand::Addr)
          return fail("a .local variable addressed directly: " + n);
        continue;
      }
      if (auto it = globals.find(n); it != globals.end()) {
        o->imm += (int64_t)it->second;
        continue;
      }
      line = entry->code[p.inst].line;
      return fail("unknown name '" + n + "'");
    }
    uint32_t dyn = (entry->staticShared + entry->dynamicAlign - 1) / entry->dynamicAlign *
                   entry->dynamicAlign;
    for (auto &inst : entry->code)
      for (auto &o : inst.ops) {
        auto fix = [&](Operand &x) {
          if (x.imm >= (1ll << 40) && x.imm < (1ll << 41))
            x.imm = x.imm - (1ll << 40) + dyn;
        };
        fix(o);
        for (auto &e : o.elems)
          fix(e);
      }
    entry->staticShared = dyn;
    entry->numRegs = (int)regs.size();
    return true;
  }

  // ".shared .align 16 .b8 name[4096]" (also .global with an initializer,
  // and .local); returns name, size, align.
  bool parseVariable(const std::string &decl, std::string &name, uint32_t &size, uint32_t &align,
                     std::vector<uint8_t> *init) {
    std::string lhs = decl.substr(0, decl.find('='));
    std::istringstream in(lhs);
    std::string tok;
    Ty ty = Ty::B8;
    align = 1;
    name.clear();
    while (in >> tok) {
      if (tok == ".align") {
        in >> align;
      } else if (tok[0] == '.') {
        Ty t;
        if (typeOf(tok.substr(1), t))
          ty = t;
      } else {
        name = tok;
      }
    }
    uint32_t elem = typeBytes(ty), count = 1;
    if (size_t br = name.find('['); br != std::string::npos) {
      std::string n = name.substr(br + 1, name.find(']') - br - 1);
      int64_t c = 0;
      if (!n.empty() && (!parseImm(n, c) || c < 0 || c > UINT32_MAX))
        return fail("malformed array size in '" + decl + "'");
      count = (uint32_t)c;
      name = name.substr(0, br);
    }
    size = elem * count;
    align = std::max(align, elem);
    if (init) {
      init->assign(size, 0);
      size_t eq = decl.find('=');
      if (eq != std::string::npos) {
        std::string body = decl.substr(eq + 1);
        body = trim(body);
        if (!body.empty() && body[0] == '{')
          body = body.substr(1, body.rfind('}') - 1);
        auto vals = splitTopLevel(body, ',');
        for (size_t i = 0; i < vals.size() && i < count; ++i) {
          int64_t v = 0;
          if (!parseImm(vals[i], v))
            return fail("unsupported initializer '" + vals[i] + "'");
          std::memcpy(init->data() + i * elem, &v, elem);
        }
      }
    }
    return true;
  }

  bool parseInstruction(std::string stmt) {
    Inst inst;
    inst.line = line;
    stmt = trim(stmt);
    if (stmt[0] == '@') {
      size_t sp = stmt.find_first_of(" \t");
      std::string p = stmt.substr(1, sp - 1);
      inst.predNeg = p[0] == '!';
      inst.pred = reg(inst.predNeg ? p.substr(1) : p);
      stmt = trim(stmt.substr(sp));
    }
    size_t sp = stmt.find_first_of(" \t");
    std::string opcode = stmt.substr(0, sp);
    std::string rest = sp == std::string::npos ? "" : trim(stmt.substr(sp));
    std::vector<std::string> parts;
    {
      std::string cur;
      for (size_t i = 0; i <= opcode.size(); ++i) {
        if (i == opcode.size() || (opcode[i] == '.' && !(i > 0 && opcode[i - 1] == ':'))) {
          parts.push_back(cur);
          cur.clear();
        } else {
          cur += opcode[i];
        }
      }
    }
    const std::string &base = parts[0];
    std::vector<Ty> types;
    std::vector<std::string> mods;
    for (size_t i = 1; i < parts.size(); ++i) {
      Ty t;
      if (typeOf(parts[i], t))
        types.push_back(t);
      else
        mods.push_back(parts[i]);
    }
    auto has = [&](const char *m) {
      for (auto &x : mods)
        if (x == m)
          return true;
      return false;
    };
    if (!types.empty())
      inst.ty = types.back();
    static const std::map<std::string, Op> ops = {
        {"abs", Op::Abs},     {"add", Op::Add},     {"and", Op::And},   {"bar", Op::Bar},
        {"barrier", Op::Bar}, {"bfe", Op::Bfe},     {"bfi", Op::Bfi},   {"bra", Op::Bra},
        {"brev", Op::Brev},   {"clz", Op::Clz},     {"copysign", Op::Copysign},
        {"cos", Op::Cos},     {"cvt", Op::Cvt},     {"cvta", Op::Cvta}, {"div", Op::Div},
        {"ex2", Op::Ex2},     {"exit", Op::Exit},   {"fma", Op::Fma},   {"ld", Op::Ld},
        {"ldmatrix", Op::Ldmatrix}, {"lg2", Op::Lg2}, {"mad", Op::Mad}, {"max", Op::Max},
        {"min", Op::Min},     {"mma", Op::Mma},     {"mov", Op::Mov},   {"mul", Op::Mul},
        {"neg", Op::Neg},     {"not", Op::Not},     {"or", Op::Or},     {"popc", Op::Popc},
        {"prmt", Op::Prmt},   {"rcp", Op::Rcp},     {"rem", Op::Rem},   {"ret", Op::Ret},
        {"rsqrt", Op::Rsqrt}, {"selp", Op::Selp},   {"setp", Op::Setp}, {"shfl", Op::Shfl},
        {"shl", Op::Shl}, {"shf", Op::Shf},     {"shr", Op::Shr},     {"sin", Op::Sin},   {"sqrt", Op::Sqrt},
        {"st", Op::St},       {"sub", Op::Sub},     {"tanh", Op::Tanh}, {"testp", Op::Testp},
        {"xor", Op::Xor},     {"fence", Op::Nop},   {"membar", Op::Nop}, {"ldu", Op::Ld}};
    if (base == "addc" || base == "subc" || base == "madc") {
      inst.op = base == "addc" ? Op::Add : base == "subc" ? Op::Sub : Op::Mad;
      inst.carryIn = true;
    } else if (base == "call") {
      inst.op = Op::Call;
    } else if (base == "cp" && parts.size() > 4 && parts[2] == "bulk" && parts[3] == "tensor") {
      // TMA: a whole box, completing its bytes on an mbarrier; not the
      // im2col, multicast or cache-hint forms.
      inst.op = Op::CpBulkTensor;
      inst.m = (uint16_t)std::atoi(parts[4].c_str()); // "3d"
      inst.mode = has("multicast::cluster"); // into each block of a mask
      if (inst.m < 1 || inst.m > 5 || !has("global") || !has("mbarrier::complete_tx::bytes") ||
          has("im2col") || has("L2::cache_hint"))
        return fail("unsupported bulk tensor copy '" + opcode + "'");
    } else if (base == "cp") {
      if (parts.size() < 3 || parts[1] != "async")
        return fail("unsupported instruction '" + opcode + "'");
      inst.op = parts[2] == "mbarrier" ? Op::CpMbarArrive
                : parts[2] == "commit_group" ? Op::CpCommit
                : parts[2] == "wait_group" || parts[2] == "wait_all" ? Op::CpWait
                : Op::CpAsync;
      if (parts[2] == "wait_all")
        inst.mode = 1;
    } else if (base == "barrier" && parts.size() > 2 && parts[1] == "cluster") {
      inst.op = parts[2] == "arrive" ? Op::ClusterArrive
                : parts[2] == "wait" ? Op::ClusterWait
                : Op::Nop;
      if (inst.op == Op::Nop)
        return fail("unsupported cluster barrier '" + opcode + "'");
    } else if (base == "mapa") {
      inst.op = Op::Mapa;
      if (!has("shared::cluster"))
        return fail("unsupported mapa '" + opcode + "' (generic addresses)");
    } else if (base == "mbarrier") {
      // The CTA-local forms a producer/consumer ring uses, and an arrival
      // on another block's (shared::cluster: mapa's address); the other
      // cluster forms are refused.
      const std::string what = parts.size() > 1 ? parts[1] : "";
      inst.op = what == "init" ? Op::MbarInit
                : what == "arrive" ? Op::MbarArrive
                : what == "try_wait" && has("parity") ? Op::MbarWait
                : Op::Nop;
      bool remote = what == "arrive" && has("shared::cluster") && !has("expect_tx");
      if (inst.op == Op::Nop || (has("expect_tx") && what != "arrive") ||
          (has("shared::cluster") && !remote))
        return fail("unsupported mbarrier operation '" + opcode + "'");
      inst.mode = remote;
      inst.mode2 = has("expect_tx") ? 1 : 0; // arrive.expect_tx: its count is bytes
    } else if (base == "setmaxnreg") {
      inst.op = Op::Nop; // a register budget: nothing to emulate
    } else if (base == "wgmma") {
      inst.op = parts[1] == "mma_async"      ? Op::Wgmma
                : parts[1] == "wait_group"   ? Op::WgWait
                : parts[1] == "commit_group" ? Op::WgCommit
                                             : Op::Nop;
    } else {
      auto it = ops.find(base);
      if (it == ops.end())
        return fail("unsupported instruction '" + opcode + "'");
      inst.op = it->second;
    }
    for (auto &m : mods) {
      if (m == "global") inst.space = Space::Global;
      // A block outside a cluster is a cluster of one: shared::cluster
      // addresses are its shared ones.
      else if (m == "shared" || m == "shared::cta" || m == "shared::cluster")
        inst.space = Space::Shared;
      else if (m == "param") inst.space = Space::Param;
      else if (m == "local") inst.space = Space::Local;
      else if (m == "const") inst.space = Space::Const;
      else if (m == "v2" || m == "x2") inst.vec = 2;
      else if (m == "v4" || m == "x4") inst.vec = 4;
      else if (m == "x1") inst.vec = 1;
      else if (m == "sat") inst.sat = true;
      else if (m == "ftz") inst.ftz = true;
      else if (m == "trans") inst.trans = true;
      else if (m == "approx") inst.approx = true;
      else if (m == "cc") inst.cc = true;
    }
    // Rounding (cvt, float arithmetic): 1 rn, 2 rz, 3 rm, 4 rp, 5 rna; +8
    // for the integer forms (rni...).
    static const std::map<std::string, uint8_t> rounding = {
        {"rn", 1}, {"rz", 2}, {"rm", 3}, {"rp", 4}, {"rna", 5},
        {"rni", 9}, {"rzi", 10}, {"rmi", 11}, {"rpi", 12}};
    switch (inst.op) {
    case Op::Cvt:
      if (types.size() != 2)
        return fail("cvt needs two types: '" + opcode + "'");
      inst.ty = types[0];
      inst.ty2 = types[1];
      for (auto &m : mods)
        if (rounding.count(m))
          inst.mode = rounding.at(m);
      break;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Fma: case Op::Div: case Op::Sqrt:
    case Op::Rcp: case Op::Mad:
      for (auto &m : mods) {
        if (rounding.count(m))
          inst.mode2 = rounding.at(m);
        if (m == "lo") inst.mode = 0;
        if (m == "hi") inst.mode = 1;
        if (m == "wide") inst.mode = 2;
      }
      break;
    case Op::Setp: {
      if (types.size() != 1)
        return fail("unsupported setp '" + opcode + "'");
      auto &cmps = comparisons();
      for (auto &m : mods) {
        if (cmps.count(m)) inst.mode = cmps.at(m);
        if (m == "and") inst.mode2 = 1;
        if (m == "or") inst.mode2 = 2;
        if (m == "xor") inst.mode2 = 3;
      }
      if (!inst.mode)
        return fail("unsupported setp '" + opcode + "'");
      break;
    }
    case Op::Shfl:
      inst.mode = has("up") ? 0 : has("down") ? 1 : has("bfly") ? 2 : has("idx") ? 3 : 9;
      if (inst.mode == 9 || !has("sync"))
        return fail("unsupported shuffle '" + opcode + "'");
      break;
    case Op::Max: case Op::Min:
      inst.mode = has("NaN") ? 1 : 0;
      break;
    case Op::Shf: // funnel shift: bit 0 right, bit 1 clamp
      inst.mode = (has("r") ? 1 : 0) | (has("clamp") ? 2 : 0);
      break;
    case Op::Cvta:
      inst.mode = has("to") ? 1 : 0;
      break;
    case Op::Bar:
      if (!has("sync") && !(base == "barrier" && mods.empty()))
        return fail("unsupported barrier '" + opcode + "'");
      break;
    case Op::Testp:
      inst.mode = has("finite") ? 1 : has("infinite") ? 2 : has("number") ? 3
                  : has("notanumber") ? 4 : 0;
      if (!inst.mode)
        return fail("unsupported testp '" + opcode + "'");
      break;
    case Op::Mma: case Op::Wgmma: {
      for (auto &m : mods)
        if (m.size() > 1 && m[0] == 'm' && std::isdigit((unsigned char)m[1]))
          std::sscanf(m.c_str(), "m%hun%huk%hu", &inst.m, &inst.n, &inst.k);
      if (types.size() < 3)
        return fail("unsupported matrix multiply '" + opcode + "'");
      inst.ty = types[0];
      inst.ty2 = types[1];
      if (inst.op == Op::Mma && !(has("row") && has("col")))
        return fail("only row.col mma is supported: '" + opcode + "'");
      if (inst.op == Op::Mma && !((inst.m == 16 && inst.n == 8 && (inst.k == 8 || inst.k == 16))))
        return fail("unsupported mma shape: '" + opcode + "'");
      if (inst.op == Op::Wgmma && inst.m != 64)
        return fail("unsupported wgmma shape: '" + opcode + "'");
      break;
    }
    case Op::CpMbarArrive:
      inst.mode = has("noinc");
      break;
    case Op::Prmt:
      if (mods.size() > 0)
        return fail("unsupported prmt mode: '" + opcode + "'");
      break;
    default:
      break;
    }
    entry->code.push_back(inst);
    size_t index = entry->code.size() - 1;
    auto operands = splitTopLevel(rest, ',');
    if (inst.op == Op::Call) {
      // call[.uni] [(ret),] name, (args): ret and args are .param names.
      std::vector<std::string> lists[2];
      std::string callee;
      for (auto &o : operands) {
        if (o[0] == '(') {
          auto names = splitTopLevel(o.substr(1, o.size() - 2), ',');
          lists[callee.empty() ? 0 : 1] = names;
        } else {
          callee = o;
        }
      }
      if (!callee.empty() && lists[1].empty() && !lists[0].empty() && operands.size() == 2 &&
          operands[0][0] != '(')
        std::swap(lists[0], lists[1]);
      calls.push_back({entry, index, callee});
      auto &ops = entry->code[index].ops;
      ops.resize(2);
      for (int l = 0; l < 2; ++l) {
        ops[l].kind = Operand::Vec;
        ops[l].elems.resize(lists[l].size());
        for (size_t i = 0; i < lists[l].size(); ++i) {
          ops[l].elems[i].kind = Operand::Imm;
          pending.push_back({index, {l, (int)i}, lists[l][i]});
        }
      }
      return true;
    }
    entry->code[index].ops.resize(operands.size());
    for (size_t i = 0; i < operands.size(); ++i)
      if (!parseOperand(operands[i], entry->code[index].ops[i], index, {(int)i}))
        return false;
    return true;
  }

  // The body of an entry, from after its opening brace; `pos` ends after
  // the closing one.
  bool parseBody(const std::string &text, size_t &pos) {
    std::string stmt;
    int braces = 0; // operand braces inside a statement
    int scopes = 0; // inline-asm scopes
    for (; pos < text.size(); ++pos) {
      char c = text[pos];
      if (c == '\n')
        ++line;
      if (c == '/' && pos + 1 < text.size() && text[pos + 1] == '/') {
        while (pos < text.size() && text[pos] != '\n')
          ++pos;
        ++line;
        continue;
      }
      std::string t = trim(stmt);
      if (c == '{') {
        if (t.empty()) {
          ++scopes;
          scopeIds.push_back(++scopeSerial);
          continue;
        }
        ++braces;
      } else if (c == '}') {
        if (braces == 0) {
          if (!t.empty())
            return fail("unterminated statement '" + t + "'");
          if (scopes == 0) {
            ++pos;
            return resolve();
          }
          --scopes;
          scopeIds.pop_back();
          continue;
        }
        --braces;
      } else if (c == ':' && braces == 0 && !t.empty() &&
                 t.find_first_of(" \t") == std::string::npos &&
                 !(pos + 1 < text.size() && text[pos + 1] == ':') && text[pos - 1] != ':') {
        labels[scopeIds.empty() ? t : t + "@" + std::to_string(scopeIds.back())] =
            (int)entry->code.size();
        stmt.clear();
        continue;
      } else if (c == ';' && braces == 0) {
        stmt.clear();
        if (t.empty())
          continue;
        if (t[0] == '.') {
          if (!parseDeclaration(t))
            return false;
        } else {
          size_t before = pending.size();
          if (!parseInstruction(t))
            return false;
          for (size_t i = before; i < pending.size(); ++i)
            pending[i].scope = scopeIds.empty() ? 0 : scopeIds.back();
        }
        continue;
      }
      stmt += c;
    }
    return fail("an entry without its closing brace");
  }

  bool parseDeclaration(const std::string &t) {
    if (t.rfind(".pragma", 0) == 0)
      return true;
    if (t.rfind(".reg", 0) == 0) {
      // Inline asm's scoped registers have plain names (".reg .pred p"),
      // several to a line in libdevice's (".reg .u32 r0, r1, alo, ahi").
      size_t type = t.find('.', 1);
      size_t names = type == std::string::npos ? type : t.find_first_of(" \t", type);
      if (names == std::string::npos)
        return fail("bad register declaration '" + t + "'");
      for (const std::string &part : splitTopLevel(t.substr(names), ',')) {
        std::string name = trim(part);
        if (!name.empty() && name[0] != '%')
          reg(name);
      }
      return true;
    }
    std::string name;
    uint32_t size, align;
    if (t.rfind(".shared", 0) == 0) {
      if (!parseVariable(t, name, size, align, nullptr))
        return false;
      uint32_t at = (entry->staticShared + align - 1) / align * align;
      shared[name] = at;
      entry->staticShared = at + size;
      return true;
    }
    if (t.rfind(".param", 0) == 0) { // a call's argument or result
      if (!parseVariable(t, name, size, align, nullptr))
        return false;
      uint32_t at = (entry->frameBytes + align - 1) / align * align;
      callParams[name] = {at, size};
      entry->frameBytes = at + size;
      return true;
    }
    if (t.rfind(".local", 0) == 0) {
      if (!parseVariable(t, name, size, align, nullptr))
        return false;
      uint32_t at = (entry->localBytes + align - 1) / align * align;
      locals[name] = at;
      entry->localBytes = at + size;
      return true;
    }
    return fail("unsupported declaration '" + t + "'");
  }

  // ".visible .entry NAME(params) [directives] {" or
  // ".func [(.param .b64 func_retval0)] NAME(params) {".
  bool parseEntry(const std::string &text, size_t &pos, bool function) {
    size_t open = text.find('(', pos);
    std::string ret;
    if (function) {
      size_t kw = text.find(".func", pos) + 5;
      size_t name = text.find_first_not_of(" \t\n", kw);
      if (text[name] == '(') { // the return value
        size_t end = text.find(')', name);
        ret = text.substr(name + 1, end - name - 1);
        open = text.find('(', end);
      }
    }
    size_t close = text.find(')', open);
    if (open == std::string::npos || close == std::string::npos)
      return fail("an entry without parameters");
    std::string head = text.substr(pos, open - pos);
    if (!ret.empty())
      head = head.substr(head.rfind(')') + 1);
    size_t kw = head.find(function ? ".func" : ".entry");
    std::string name = trim(kw == std::string::npos ? head : head.substr(kw + (function ? 5 : 6)));
    Entry &e = function ? mod.functions[name] : mod.entries[name];
    e.name = name;
    entry = &e;
    regs.clear();
    shared.clear();
    locals.clear();
    labels.clear();
    pending.clear();
    scopeIds.clear();
    callParams.clear();
    for (auto &p : splitTopLevel(text.substr(open + 1, close - open - 1), ',')) {
      // ".param .u64 .ptr .align 1 NAME" or ".param .align 8 .b8 NAME[16]"
      std::string pname;
      uint32_t size, align;
      if (!parseVariable(p, pname, size, align, nullptr))
        return false;
      if (p.find(".ptr") != std::string::npos)
        size = 8, align = 8;
      uint32_t at = (e.paramBytes + align - 1) / align * align;
      e.params.push_back({pname, at, size});
      e.paramBytes = at + size;
    }
    e.frameBytes = e.paramBytes;
    if (!ret.empty()) {
      std::string rname;
      uint32_t size, align;
      if (!parseVariable(ret, rname, size, align, nullptr))
        return false;
      e.retOffset = (int32_t)((e.frameBytes + align - 1) / align * align);
      e.retSize = size;
      e.frameBytes = e.retOffset + size;
    }
    for (size_t i = pos; i < close; ++i)
      if (text[i] == '\n')
        ++line;
    size_t brace = text.find('{', close);
    if (brace == std::string::npos)
      return fail("the entry '" + name + "' has no body");
    for (size_t i = close; i < brace; ++i)
      if (text[i] == '\n')
        ++line;
    // Blocks a cluster, fixed in the PTX (the launch is a plain one).
    std::string directives = text.substr(close, brace - close);
    if (size_t at = directives.find(".reqnctapercluster"); at != std::string::npos) {
      unsigned x = 1, y = 1, z = 1;
      if (std::sscanf(directives.c_str() + at, ".reqnctapercluster %u, %u, %u", &x, &y, &z) < 1 ||
          !x || !y || !z || x * y * z > 8)
        return fail("unsupported .reqnctapercluster in '" + name + "'");
      e.cluster[0] = x, e.cluster[1] = y, e.cluster[2] = z;
    }
    pos = brace + 1;
    return parseBody(text, pos);
  }

  bool skipBlock(const std::string &text, size_t &pos) {
    size_t brace = text.find('{', pos), semi = text.find(';', pos);
    if (semi < brace) { // a declaration only
      pos = semi + 1;
      return true;
    }
    int depth = 0;
    for (pos = brace; pos < text.size(); ++pos) {
      if (text[pos] == '\n')
        ++line;
      if (text[pos] == '{')
        ++depth;
      if (text[pos] == '}' && --depth == 0) {
        ++pos;
        return true;
      }
    }
    return fail("unterminated function");
  }

  bool parse(const std::string &text) {
    size_t pos = 0;
    line = 1;
    while (pos < text.size()) {
      size_t eol = text.find('\n', pos);
      if (eol == std::string::npos)
        eol = text.size();
      std::string l = trim(text.substr(pos, eol - pos));
      if (size_t c = l.find("//"); c != std::string::npos)
        l = trim(l.substr(0, c));
      if (l.empty() || l.rfind(".version", 0) == 0 || l.rfind(".target", 0) == 0 ||
          l.rfind(".address_size", 0) == 0) {
        pos = eol + 1;
        ++line;
        continue;
      }
      if (l.find(".entry") != std::string::npos) {
        if (!parseEntry(text, pos, false))
          return false;
        continue;
      }
      if (l.find(".func") != std::string::npos) {
        // A prototype (";" before any "{") or a definition.
        size_t brace = text.find('{', pos), semi = text.find(';', pos);
        if (semi < brace) {
          if (!skipBlock(text, pos))
            return false;
        } else if (!parseEntry(text, pos, true)) {
          return false;
        }
        continue;
      }
      size_t semi = text.find(';', pos);
      if (semi == std::string::npos)
        return fail("unsupported directive '" + l + "'");
      std::string decl = trim(text.substr(pos, semi - pos));
      for (size_t i = pos; i < semi; ++i)
        if (text[i] == '\n')
          ++line;
      pos = semi + 1;
      std::string name;
      uint32_t size, align;
      if (decl.find(".global") != std::string::npos || decl.find(".const") != std::string::npos) {
        auto data = std::make_unique<std::vector<uint8_t>>();
        if (!parseVariable(decl, name, size, align, data.get()))
          return false;
        data->resize(std::max<size_t>(data->size(), 1) + 64);
        // Aligned within the owned bytes.
        uint64_t addr = (uint64_t)(uintptr_t)data->data();
        addr = (addr + 63) / 64 * 64;
        // Re-copy so the aligned address holds the value.
        std::vector<uint8_t> copy(data->begin(), data->begin() + size);
        std::memcpy((void *)(uintptr_t)addr, copy.data(), size);
        globals[name] = addr;
        addDeviceMemory(addr, size);
        mod.globalAddresses.push_back(addr);
        mod.globals.push_back(std::move(data));
      } else if (decl.find(".shared") != std::string::npos) {
        if (!parseVariable(decl, name, size, align, nullptr))
          return false;
        if (decl.find(".extern") != std::string::npos)
          dynamicShared[name] = align;
        else
          moduleShared[name] = {size, align};
      } else {
        return fail("unsupported directive '" + decl + "'");
      }
    }
    for (auto &c : calls) {
      auto it = mod.functions.find(c.callee);
      // The device heap (CUDA's malloc and free: a kernel's buffers sized
      // or made in a loop) is the emulator's own.
      if (it == mod.functions.end() && (c.callee == "malloc" || c.callee == "free")) {
        c.caller->code[c.inst].heapCall = c.callee == "malloc" ? 1 : 2;
        continue;
      }
      if (it == mod.functions.end())
        return fail("a call to '" + c.callee + "', which the module does not define");
      c.caller->code[c.inst].callee = &it->second;
    }
    return true;
  }
};

} // namespace

std::unique_ptr<Module> parsePtx(const std::string &text, std::string &error) {
  auto mod = std::make_unique<Module>();
  Parser p(*mod, error);
  try {
    if (!p.parse(text))
      return nullptr;
  } catch (const std::exception &e) { // a malformed number (std::stoul...)
    error = "line " + std::to_string(p.line) + ": malformed PTX (" + e.what() + ")";
    return nullptr;
  }
  return mod;
}

} // namespace kiln::emu
