#!/usr/bin/env python3
"""Generates the register map's views from include/hw/rhinet/registers.toml.

    regmap.py --write      rewrite every generated file
    regmap.py --check      exit 1, naming each file, if one differs
    regmap.py --print F    print one generated file (a path in OUTPUTS)

The views: the C header every layer includes, a SystemVerilog package for
RTL, the conformance suite's register table, and the tables of
Documentation/hardware/registers.md between its generated markers.
"""
import argparse
import pathlib
import shutil
import subprocess
import sys
import tomllib

REPO = pathlib.Path(__file__).resolve().parent.parent
SOURCE = REPO / "include/hw/rhinet/registers.toml"
HEADER = "include/hw/rhinet/hw_regs.h"
SV_PACKAGE = "include/hw/rhinet/rhinet_regs_pkg.sv"
CONFORM_TABLE = "conformance/reg_table.h"
DOC = "Documentation/hardware/registers.md"
DESC = "include/hw/rhinet/regmap_desc.h"


class MapError(Exception):
    pass


# ---- reading and checking the description ----------------------------------


def field_bits(f):
    """(msb, lsb) of a field given as bit = n or bits = [msb, lsb]."""
    if "bit" in f:
        return f["bit"], f["bit"]
    msb, lsb = f["bits"]
    return msb, lsb


def field_mask(f):
    msb, lsb = field_bits(f)
    return ((1 << (msb - lsb + 1)) - 1) << lsb


def reset_of(reg):
    """(mask, value): the bits the contract fixes after a reset."""
    width_mask = (1 << reg["width"]) - 1
    if reg["access"] == "WO":
        return 0, 0
    if "fields" not in reg:
        if "reset" in reg:
            return width_mask, reg["reset"] & width_mask
        return 0, 0
    mask, value, used = width_mask, 0, 0
    for f in reg["fields"]:
        m = field_mask(f)
        used |= m
        r = f.get("reset", "impl")
        if r == "impl":
            mask &= ~m
        else:
            value |= (r << field_bits(f)[1]) & m
    return mask, value


def load():
    data = tomllib.loads(SOURCE.read_text())
    regs = data["register"]
    seen = {}
    for r in regs:
        if r["width"] not in (32, 64):
            raise MapError(f"{r['name']}: width must be 32 or 64")
        if r["access"] not in ("RO", "RW", "WO"):
            raise MapError(f"{r['name']}: access must be RO, RW or WO")
        if r["offset"] % (r["width"] // 8):
            raise MapError(f"{r['name']}: offset not aligned to its width")
        for o in range(r["offset"], r["offset"] + r["width"] // 8, 4):
            if o in seen:
                raise MapError(f"{r['name']} overlaps {seen[o]}")
            seen[o] = r["name"]
        if r["access"] == "RW" and "probe" not in r:
            raise MapError(f"{r['name']}: an RW register needs a probe value")
        used = 0
        for f in r.get("fields", []):
            msb, lsb = field_bits(f)
            if not (0 <= lsb <= msb < r["width"]):
                raise MapError(f"{r['name']}.{f['name']}: bits out of range")
            if used & field_mask(f):
                raise MapError(f"{r['name']}.{f['name']}: overlaps a field")
            used |= field_mask(f)
            if "values" in f and (len(f["values"]) > field_mask(f) >> lsb
                                  or "values_enum" not in f):
                raise MapError(f"{r['name']}.{f['name']}: values need a "
                               "values_enum and must fit the field")
    cb = data["counter_block"]
    end = cb["offset"] + 8 * len(data["counter"])
    if end > data["bar"][0]["size"]:
        raise MapError("the counters do not fit in BAR0")
    if any(cb["offset"] <= o < end for o in seen):
        raise MapError("a register lies in the counter block")
    return data


# ---- the C header ------------------------------------------------------------


def c_comment(text, indent=""):
    lines = text.strip("\n").split("\n")
    if len(lines) == 1:
        return [f"{indent}/* {lines[0]} */"]
    return [f"{indent}/*"] + [f"{indent} * {ln}".rstrip() for ln in lines] + [f"{indent} */"]


def c_bit(n, width):
    return f"(1ull << {n})" if width == 64 else f"(1u << {n})"


def c_mask(m, width):
    return f"0x{m:x}ull" if width == 64 else f"0x{m:x}u"


def header(d):
    out = []
    w = out.append
    w("/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */")
    w("/*")
    w(" * RHiNET-NG hardware contract: PCI identity, BAR0 registers, doorbell pages,")
    w(" * MSI-X vectors and hardware counters. Described in")
    w(" * Documentation/hardware/registers.md.")
    w(" *")
    w(" * Generated from registers.toml by scripts/regmap.py: edit that file, not")
    w(" * this one.")
    w(" */")
    w("#ifndef RHINET_HW_REGS_H")
    w("#define RHINET_HW_REGS_H")
    w("")
    w('#include "hw_common.h"')
    w("")
    p = d["pci"]
    w("/* PCI identity */")
    w(f"#define RHN_PCI_VENDOR_ID 0x{p['vendor_id']:04x} /* {p['vendor_note']} */")
    w(f"#define RHN_PCI_DEVICE_ID 0x{p['device_id']:04x} /* {p['device_note']} */")
    w(f"#define RHN_PCI_CLASS 0x{p['class']:04x} /* {p['class_note']} */")
    w(f"#define RHN_PCI_REVISION 0x{p['revision']:02x}")
    w("")
    w("/* Boards a firmware image is built for (hw_fw.h, board_id). */")
    for b in d["board"]:
        w(f"/* {b['doc']} */")
        w(f"#define RHN_BOARD_{b['name'].upper().replace('-', '_')} {b['id']}")
    w("/* Boards' names by ID, as firmware files are named (\"\": no board). */")
    top = max(b['id'] for b in d["board"])
    byid = {b['id']: b['name'] for b in d["board"]}
    names = ", ".join('"%s"' % byid.get(i, "") for i in range(top + 1))
    w(f"#define RHN_BOARD_NAME_LIST {names}")
    w("")
    w("/* BARs */")
    for b in d["bar"]:
        doc = f" /* {b['doc']} */" if "doc" in b else ""
        w(f"#define RHN_BAR_{b['name']} {b['index']}{doc}")
        if "size" in b:
            w(f"#define RHN_BAR_{b['name']}_SIZE 0x{b['size']:x}")
    dp = d["doorbell_page"]
    w(f"#define RHN_DB_PAGE_SHIFT {dp['page_shift']}")
    w("#define RHN_DB_PAGE_SIZE (1u << RHN_DB_PAGE_SHIFT)")
    w("")
    c = d["contract"]
    w(f"#define RHN_VERSION_MAJOR {c['version_major']}")
    w(f"#define RHN_VERSION_MINOR {c['version_minor']}")
    w("#define RHN_VERSION ((RHN_VERSION_MAJOR << 16) | RHN_VERSION_MINOR)")
    w("")
    w('/* BAR0 register offsets. 32-bit registers unless marked "64". */')
    w("enum rhn_reg {")
    cb = d["counter_block"]
    for r in d["register"]:
        kind = r["access"] + (" 64" if r["width"] == 64 else "")
        w(f"\tRHN_REG_{r['name']} = 0x{r['offset']:03x}, /* {kind}: {r['doc']} */")
    w(f"\tRHN_REG_{cb['name']} = 0x{cb['offset']:x}, /* {cb['doc']} */")
    w("};")
    for r in d["register"]:
        if "fields" not in r:
            continue
        w("")
        if "comment" in r:
            out.extend(c_comment(r["comment"]))
        if "enum" in r:
            w(f"enum {r['enum']} {{")
            for f in r["fields"]:
                name = f"RHN_{r['prefix']}_{f['name']}"
                doc = f.get("c_doc")
                tail = f" /* {doc} */" if doc else ""
                w(f"\t{name} = 1u << {f['bit']},{tail}")
            w("};")
            continue
        for f in r["fields"]:
            name = f"RHN_{r['prefix']}_{f['name']}"
            msb, lsb = field_bits(f)
            if msb == lsb:
                w(f"#define {name} {c_bit(lsb, r['width'])}")
            else:
                w(f"#define {name}_SHIFT {lsb}")
                w(f"#define {name}_MASK {c_mask((1 << (msb - lsb + 1)) - 1, r['width'])}")
            if "values" in f:
                # A field's named values, and their names by position for
                # the tools that print them (driver, rhinet-diag).
                w(f"enum {f['values_enum']} {{")
                for i, v in enumerate(f["values"]):
                    w(f"\tRHN_{r['prefix']}_{v.upper()} = {i},")
                w("};")
                names = ", ".join(c_string(v) for v in f["values"])
                w(f"#define {name}_NAMES {names}")
    w("")
    out.extend(c_comment(dp["comment"]))
    w("enum rhn_db_offset {")
    for k in d["doorbell"]:
        w(f"\tRHN_DB_{k['name']} = 0x{k['offset']:03x}, /* {k['doc']} */")
    w("};")
    w(f"#define RHN_DB_INLINE_WQE_SIZE {dp['inline_window_size']}")
    w(f"#define RHN_DB_QN_MASK 0x{(1 << dp['qn_bits']) - 1:08x}u")
    for k in d["doorbell"]:
        for f in k.get("flags", []):
            if "comment" in f:
                lines = f["comment"].strip("\n").split("\n")
                if len(lines) == 1:
                    w(f"/* {lines[0]} */")
                else:
                    w(f"/* {lines[0]}")
                    for ln in lines[1:-1]:
                        w(f" * {ln}")
                    w(f" * {lines[-1]}")
                    w(" */")
            w(f"#define RHN_DB_{f['name']} (1u << {f['bit']})")
    w("")
    m = d["msix"]
    w(f"/* MSI-X: {m['admin_doc']} */")
    w(f"#define RHN_MSIX_ADMIN {m['admin_vector']}")
    w("")
    w("/*")
    w(" * Hardware counters, 64-bit each at RHN_REG_COUNTERS + 8 * index, in the")
    w(" * order of this list: X(id, name, what it counts). The enum and the")
    w(" * kernel's port statistics (by name) come from it. New counters go at the")
    w(" * end: the index is the ABI.")
    w(" */")
    w("/* clang-format off */")
    w("#define RHN_COUNTERS(X) \\")
    cs = d["counter"]
    for i, k in enumerate(cs):
        doc = k["doc"].replace("\\", "\\\\").replace('"', '\\"')
        end = "" if i == len(cs) - 1 else " \\"
        w(f"\tX({k['id']}, {k['id'].lower()}, \\")
        w(f'\t  "{doc}"){end}')
    w("/* clang-format on */")
    w("")
    w("enum rhn_counter {")
    w("#define RHN_CNT_ENUM_(id, name, doc) RHN_CNT_##id,")
    w("\tRHN_COUNTERS(RHN_CNT_ENUM_)")
    w("#undef RHN_CNT_ENUM_")
    w("\tRHN_CNT_COUNT")
    w("};")
    w("")
    w("RHN_STATIC_ASSERT(RHN_REG_COUNTERS + 8 * RHN_CNT_COUNT <= RHN_BAR_REGS_SIZE,")
    w('\t\t  "counters fit in BAR0");')
    w("")
    w("#endif /* RHINET_HW_REGS_H */")
    return "\n".join(out) + "\n"


# ---- the SystemVerilog package ----------------------------------------------


def sv_hex(v, width):
    return f"{width}'h{v:x}"


def sv_package(d):
    out = []
    w = out.append
    w("// SPDX-License-Identifier: BSD-2-Clause")
    w("// RHiNET-NG register map for RTL: BAR0 offsets, access types, reset")
    w("// values and field positions, doorbell page offsets and counter")
    w("// indices. Generated from registers.toml by scripts/regmap.py: edit")
    w("// that file, not this one.")
    w("package rhinet_regs_pkg;")
    w("")
    c = d["contract"]
    p = d["pci"]
    w(f"  localparam int unsigned RHN_VERSION_MAJOR = {c['version_major']};")
    w(f"  localparam int unsigned RHN_VERSION_MINOR = {c['version_minor']};")
    w(f"  localparam logic [15:0] RHN_PCI_VENDOR_ID = 16'h{p['vendor_id']:04x};")
    w(f"  localparam logic [15:0] RHN_PCI_DEVICE_ID = 16'h{p['device_id']:04x};")
    w(f"  localparam logic [15:0] RHN_PCI_CLASS = 16'h{p['class']:04x};")
    w(f"  localparam logic [7:0] RHN_PCI_REVISION = 8'h{p['revision']:02x};")
    for b in d["bar"]:
        if "size" in b:
            w(f"  localparam int unsigned RHN_BAR_{b['name']}_SIZE = 'h{b['size']:x};")
    w("")
    w("  typedef enum logic [1:0] {")
    w("    RHN_ACCESS_RO = 2'd0,")
    w("    RHN_ACCESS_RW = 2'd1,")
    w("    RHN_ACCESS_WO = 2'd2")
    w("  } rhn_access_e;")
    w("")
    w("  // BAR0 registers: offset, width, access; reset value and the mask of")
    w("  // the bits the contract fixes after a reset (the rest are the")
    w("  // implementation's).")
    for r in d["register"]:
        n = r["name"]
        mask, value = reset_of(r)
        w(f"  localparam logic [12:0] RHN_REG_{n} = 13'h{r['offset']:03x};")
        w(f"  localparam int unsigned RHN_REG_{n}_WIDTH = {r['width']};")
        w(f"  localparam rhn_access_e RHN_REG_{n}_ACCESS = RHN_ACCESS_{r['access']};")
        w(f"  localparam logic [63:0] RHN_REG_{n}_RESET = {sv_hex(value, 64)};")
        w(f"  localparam logic [63:0] RHN_REG_{n}_RESET_MASK = {sv_hex(mask, 64)};")
        for f in r.get("fields", []):
            msb, lsb = field_bits(f)
            fn = f"RHN_{r['prefix']}_{f['name']}"
            w(f"  localparam int unsigned {fn}_LSB = {lsb};")
            w(f"  localparam int unsigned {fn}_WIDTH = {msb - lsb + 1};")
    cb = d["counter_block"]
    w(f"  localparam logic [12:0] RHN_REG_{cb['name']} = 13'h{cb['offset']:x};")
    w("")
    w("  // Doorbell pages (BAR2): offsets within a page.")
    dp = d["doorbell_page"]
    w(f"  localparam int unsigned RHN_DB_PAGE_SHIFT = {dp['page_shift']};")
    w(f"  localparam int unsigned RHN_DB_INLINE_WQE_SIZE = {dp['inline_window_size']};")
    w(f"  localparam int unsigned RHN_DB_QN_WIDTH = {dp['qn_bits']};")
    for k in d["doorbell"]:
        w(f"  localparam logic [11:0] RHN_DB_{k['name']} = 12'h{k['offset']:03x};")
        for f in k.get("flags", []):
            w(f"  localparam int unsigned RHN_DB_{f['name']}_BIT = {f['bit']};")
    w(f"  localparam int unsigned RHN_MSIX_ADMIN = {d['msix']['admin_vector']};")
    w("")
    w("  // Hardware counters: index i at RHN_REG_COUNTERS + 8 * i.")
    cs = d["counter"]
    w(f"  localparam int unsigned RHN_CNT_COUNT = {len(cs)};")
    for i, k in enumerate(cs):
        w(f"  localparam int unsigned RHN_CNT_{k['id']} = {i};")
    w("")
    w("endpackage")
    return "\n".join(out) + "\n"


# ---- the conformance suite's table -------------------------------------------


def cpp_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def conform_table(d):
    out = []
    w = out.append
    w("// SPDX-License-Identifier: BSD-2-Clause")
    w("// BAR0 registers as the conformance suite checks them: offset, width,")
    w("// access type, the bits a reset fixes and their value, and a value an")
    w("// RW register must read back. Generated from")
    w("// include/hw/rhinet/registers.toml by scripts/regmap.py: edit that")
    w("// file, not this one. Counters are not listed: every one is a")
    w("// read-only 64-bit register reading 0 after a reset.")
    w("#pragma once")
    w("")
    w("#include <cstdint>")
    w("")
    w('#include "rhinet/hw.h"')
    w("")
    w("namespace rhinet::conform {")
    w("")
    w("enum class Access { kRO, kRW, kWO };")
    w("")
    w("struct RegSpec {")
    w("  const char* name;")
    w("  uint32_t offset;")
    w("  unsigned width;  // bits")
    w("  Access access;")
    w("  // After CONTROL.RESET: (value & reset_mask) == reset_value. A mask of 0:")
    w("  // the contract gives no reset value (only other properties are checked).")
    w("  uint64_t reset_mask;")
    w("  uint64_t reset_value;")
    w("  // RW: a value that must read back once written (0 otherwise).")
    w("  uint64_t probe;")
    w("  const char* meaning;  // registers.toml's words")
    w("};")
    w("")
    w("inline constexpr RegSpec kRegs[] = {")
    for r in d["register"]:
        mask, value = reset_of(r)
        meaning = r["meaning"].replace("`", "").replace("\\|", "|").replace("**", "")
        w(f"    {{\"RHN_REG_{r['name']}\", 0x{r['offset']:03x}, {r['width']}, Access::k{r['access']},")
        w(f"     0x{mask:x}ull, 0x{value:x}ull, 0x{r.get('probe', 0):x}ull,")
        w(f"     {cpp_string(meaning)}}},")
    w("};")
    w("")
    w("}  // namespace rhinet::conform")
    return "\n".join(out) + "\n"


# ---- the decode tables of tools ---------------------------------------------


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def desc_header(d):
    out = []
    w = out.append
    w("/* SPDX-License-Identifier: BSD-2-Clause */")
    w("/*")
    w(" * The register map as data, for tools that decode a device or a dump")
    w(" * (rhinet-diag): every BAR0 register with its fields, every counter with")
    w(" * what it counts. Generated from registers.toml by scripts/regmap.py: edit")
    w(" * that file, not this one.")
    w(" */")
    w("#ifndef RHINET_REGMAP_DESC_H")
    w("#define RHINET_REGMAP_DESC_H")
    w("")
    w("struct rhn_regmap_field {")
    w("\tconst char *name;")
    w("\tunsigned int lsb;")
    w("\tunsigned int width;")
    w("};")
    w("")
    w("struct rhn_regmap_reg {")
    w("\tconst char *name; /* without RHN_REG_ */")
    w("\tunsigned int offset;")
    w("\tunsigned int width; /* bits */")
    w("\tconst char *access; /* RO, RW, WO */")
    w("\tconst struct rhn_regmap_field *fields;")
    w("\tunsigned int nfields;")
    w("};")
    w("")
    w("struct rhn_regmap_counter {")
    w("\tconst char *name; /* as the driver's statistics call it */")
    w("\tconst char *doc;")
    w("};")
    for r in d["register"]:
        if "fields" not in r:
            continue
        w("")
        w(f"static const struct rhn_regmap_field rhn_regmap_fields_{r['name'].lower()}[] = {{")
        for f in r["fields"]:
            msb, lsb = field_bits(f)
            w(f"\t{{ {c_string(f['name'])}, {lsb}, {msb - lsb + 1} }},")
        w("};")
    w("")
    w("static const struct rhn_regmap_reg rhn_regmap_regs[] = {")
    for r in d["register"]:
        if "fields" in r:
            f = f"rhn_regmap_fields_{r['name'].lower()}"
            fields = f"{f}, sizeof({f}) / sizeof({f}[0])"
        else:
            fields = "0, 0"
        w(f"\t{{ {c_string(r['name'])}, 0x{r['offset']:03x}, {r['width']}, \"{r['access']}\", {fields} }},")
    w("};")
    w("")
    w("static const struct rhn_regmap_counter rhn_regmap_counters[] = {")
    for k in d["counter"]:
        w(f"\t{{ {c_string(k['id'].lower())}, {c_string(k['doc'])} }},")
    w("};")
    w("")
    w("#endif /* RHINET_REGMAP_DESC_H */")
    return "\n".join(out) + "\n"


# ---- the document's tables -----------------------------------------------------


def md_bits(f):
    msb, lsb = field_bits(f)
    return str(lsb) if msb == lsb else f"{msb}:{lsb}"


def md_reset(r):
    if r["access"] == "WO":
        return "—"
    if "fields" not in r:
        return f"`0x{r['reset']:x}`" if "reset" in r else "impl."
    mask, value = reset_of(r)
    width_mask = (1 << r["width"]) - 1
    if mask == width_mask:
        return f"`0x{value:x}`"
    return f"`0x{value:x}` under mask `0x{mask:x}`"


def doc_sections(d):
    """Name -> generated body of each marked section of registers.md."""
    s = {}
    rows = ["| offset | name | width | access | reset | meaning |", "|---|---|---|---|---|---|"]
    for r in d["register"]:
        rows.append(
            f"| `0x{r['offset']:03x}` | `RHN_REG_{r['name']}` | {r['width']} | {r['access']} | {md_reset(r)} | {r['meaning']} |"
        )
    cb = d["counter_block"]
    rows.append(f"| `0x{cb['offset']:x}` | `RHN_REG_{cb['name']}` | 64 each | RO | `0x0` | {cb['meaning']} |")
    s["bar0"] = rows
    for r in d["register"]:
        if "enum" not in r:
            continue
        rows = ["| bit | name | reset | meaning |", "|---|---|---|---|"]
        for f in r["fields"]:
            rst = f.get("reset", "impl")
            rst = "impl." if rst == "impl" else str(rst)
            rows.append(f"| {f['bit']} | `RHN_{r['prefix']}_{f['name']}` | {rst} | {f['doc']} |")
        s[r["enum"]] = rows
    eq = next(r for r in d["register"] if r["name"] == "EQ_DOORBELL")
    rows = ["| bits | constant | meaning |", "|---|---|---|"]
    used = 0
    for f in eq["fields"]:
        msb, lsb = field_bits(f)
        used |= field_mask(f)
        name = f"RHN_{eq['prefix']}_{f['name']}"
        const = f"`{name}`" if msb == lsb else f"`{name}_MASK << {name}_SHIFT`"
        rows.append(f"| {md_bits(f)} | {const} | {f['doc']} |")
    s["eq_doorbell"] = rows
    rows = ["| ID | constant | image file | board |", "|---|---|---|---|"]
    for b in d["board"]:
        c = "RHN_BOARD_" + b["name"].upper().replace("-", "_")
        rows.append(f"| {b['id']} | `{c}` | `rhinet/{b['name']}.bin` | {b['doc']} |")
    s["boards"] = rows
    rows = ["| offset | constant | width | value written |", "|---|---|---|---|"]
    dp = d["doorbell_page"]
    for k in d["doorbell"]:
        if k.get("window"):
            last = k["offset"] + dp["inline_window_size"] - 1
            rows.append(f"| `0x{k['offset']:03x}`..`0x{last:03x}` | `RHN_DB_{k['name']}` | 8-byte stores | {k['value']} |")
        else:
            rows.append(f"| `0x{k['offset']:03x}` | `RHN_DB_{k['name']}` | {k['width']} | {k['value']} |")
    s["doorbell_page"] = rows
    rows = ["| index | offset | name | counts |", "|---|---|---|---|"]
    for i, k in enumerate(d["counter"]):
        rows.append(f"| {i} | `0x{cb['offset'] + 8 * i:x}` | `RHN_CNT_{k['id']}` | {k['doc']} |")
    s["counters"] = rows
    return s


def doc_file(d, text):
    """registers.md with every marked section replaced by its generated body."""
    sections = doc_sections(d)
    out, skipping, done = [], None, set()
    for line in text.split("\n"):
        if skipping:
            if line.strip() == f"<!-- end generated: {skipping} -->":
                out.append(line)
                skipping = None
            continue
        out.append(line)
        mark = line.strip()
        if mark.startswith("<!-- generated: ") and mark.endswith(" -->"):
            name = mark[len("<!-- generated: ") : -len(" -->")]
            if name not in sections:
                raise MapError(f"{DOC}: unknown generated section '{name}'")
            out.extend(sections[name])
            skipping = name
            done.add(name)
    if skipping:
        raise MapError(f"{DOC}: section '{skipping}' has no end marker")
    missing = set(sections) - done
    if missing:
        raise MapError(f"{DOC}: no generated marker for {', '.join(sorted(missing))}")
    return "\n".join(out)


# ---- main ----------------------------------------------------------------------


def clang_format(rel, text):
    """The C and C++ views as `make format` leaves them (the repo's config)."""
    tool = shutil.which("clang-format")
    if not tool:
        raise MapError("clang-format is missing (make deps)")
    return subprocess.run([tool, f"--assume-filename={rel}"], input=text, cwd=REPO,
                          capture_output=True, text=True, check=True).stdout


def outputs(d):
    return {
        HEADER: clang_format(HEADER, header(d)),
        SV_PACKAGE: sv_package(d),
        CONFORM_TABLE: clang_format(CONFORM_TABLE, conform_table(d)),
        DESC: clang_format(DESC, desc_header(d)),
        DOC: doc_file(d, (REPO / DOC).read_text()),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    g.add_argument("--print", metavar="FILE")
    a = ap.parse_args()
    try:
        files = outputs(load())
    except (MapError, KeyError, tomllib.TOMLDecodeError) as e:
        print(f"regmap: {SOURCE.relative_to(REPO)}: {e}", file=sys.stderr)
        return 2
    if a.print:
        if a.print not in files:
            print(f"regmap: not a generated file: {a.print}", file=sys.stderr)
            return 2
        sys.stdout.write(files[a.print])
        return 0
    stale = []
    for rel, text in files.items():
        path = REPO / rel
        old = path.read_text() if path.exists() else None
        if old == text:
            continue
        if a.write:
            path.write_text(text)
            print(f"regmap: wrote {rel}")
        else:
            stale.append(rel)
    for rel in stale:
        print(f"regmap: {rel} differs from what registers.toml generates; "
              "run python3 scripts/regmap.py --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
