#!/usr/bin/env python3
"""Extract how Go's encoding/json treats each field of the Kubernetes built-in API types.

Usage:
    python3 go_fields.py <k8s.io/api git dir> <k8s.io/apimachinery git dir> [--rev REV] > go_fields.tsv

Both arguments are (bare) git directories, e.g. the mirrors
/work/.mirror/kubernetes+api/repo and /work/.mirror/kubernetes+apimachinery/repo.
Files are read with `git --git-dir=<dir> show <rev>:<path>` (default rev HEAD).
Standard library only.  Lines the parser cannot understand are reported on stderr.

Output (TSV, see the header comment written at the top of the output):
    <struct OpenAPI name> <json name> <flags> <kind> <element type>
"""

import os
import re
import subprocess
import sys

# ----------------------------------------------------------------------------
# git access


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir=" + gitdir] + list(args),
                          check=True, stdout=subprocess.PIPE).stdout.decode("utf-8")


def ls_files(gitdir, rev, prefix=""):
    args = ["ls-tree", "-r", "--name-only", rev]
    if prefix:
        args += ["--", prefix]
    return git(gitdir, *args).splitlines()


def show(gitdir, rev, path):
    return git(gitdir, "show", "%s:%s" % (rev, path))


WARNINGS = []


def warn(msg):
    WARNINGS.append(msg)
    print("WARN: " + msg, file=sys.stderr)


# ----------------------------------------------------------------------------
# lexical helpers


def strip_comments(src):
    """Return (code, masked): comments replaced by spaces (newlines kept); in
    `masked` the contents of string/rune literals are also replaced by spaces so
    braces can be counted safely.  Both have the same length/line layout."""
    out = []
    mask = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            if j < 0:
                j = n
            out.append(" " * (j - i))
            mask.append(" " * (j - i))
            i = j
        elif c == "/" and i + 1 < n and src[i + 1] == "*":
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blk = re.sub(r"[^\n]", " ", src[i:j])
            out.append(blk)
            mask.append(blk)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(src[i:j])
            mask.append(c + " " * (j - i - 2) + c if j - i >= 2 else src[i:j])
            i = j
        elif c == "`":
            j = src.find("`", i + 1)
            j = n if j < 0 else j + 1
            lit = src[i:j]
            out.append(lit)
            mask.append("`" + re.sub(r"[^\n]", " ", lit[1:-1]) + "`")
            i = j
        else:
            out.append(c)
            mask.append(c)
            i += 1
    return "".join(out), "".join(mask)


BUILD_TAGS_TRUE = {"linux", "amd64", "unix", "gc", "cgo"}


def build_ok(src):
    for line in src.splitlines():
        s = line.strip()
        if s.startswith("package "):
            break
        m = re.match(r"//go:build\s+(.*)", s)
        if m:
            expr = m.group(1)
            py = re.sub(r"[A-Za-z_][\w.]*",
                        lambda t: "True" if (t.group(0) in BUILD_TAGS_TRUE or t.group(0).startswith("go1")) else "False",
                        expr)
            py = py.replace("&&", " and ").replace("||", " or ").replace("!", " not ")
            try:
                return bool(eval(py, {"__builtins__": {}}))
            except Exception:
                warn("cannot evaluate build constraint %r" % expr)
                return True
    return True


# ----------------------------------------------------------------------------
# Go type expressions


def parse_type(s):
    """Parse a Go type expression into a tuple AST."""
    s = s.strip()
    if s.startswith("*"):
        return ("ptr", parse_type(s[1:]))
    if s.startswith("[]"):
        return ("slice", parse_type(s[2:]))
    m = re.match(r"\[(\w*)\](.*)$", s)
    if m:
        return ("array", m.group(1), parse_type(m.group(2)))
    if s.startswith("map["):
        depth, i = 0, 3
        while i < len(s):
            if s[i] == "[":
                depth += 1
            elif s[i] == "]":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        return ("map", parse_type(s[4:i]), parse_type(s[i + 1:]))
    if re.match(r"interface\s*\{", s) or s == "any":
        return ("interface",)
    if re.match(r"struct\s*\{", s):
        return ("anonstruct",)
    if s.startswith("func"):
        return ("func",)
    if s.startswith("chan") or s.startswith("<-"):
        return ("chan",)
    m = re.match(r"^([A-Za-z_]\w*)\.([A-Za-z_]\w*)$", s)
    if m:
        return ("named", m.group(1), m.group(2))
    m = re.match(r"^([A-Za-z_]\w*)$", s)
    if m:
        return ("named", None, m.group(1))
    return ("unknown", s)


BUILTIN_KIND = {
    "string": "string", "bool": "bool",
    "int": "int", "int8": "int", "int16": "int", "int32": "int", "int64": "int",
    "uint": "int", "uint8": "int", "uint16": "int", "uint32": "int", "uint64": "int",
    "uintptr": "int", "byte": "int", "rune": "int",
    "float32": "float", "float64": "float",
    "error": "interface", "any": "interface",
}

# well-known types of the Go standard library that can appear
STD_TYPES = {
    ("time", "Duration"): ("int", None),
    ("time", "Time"): ("custom", "time.Time"),
    ("json", "RawMessage"): ("custom", "encoding/json.RawMessage"),
}

# ----------------------------------------------------------------------------
# packages


class Pkg:
    def __init__(self, key, openapi_prefix):
        self.key = key              # e.g. "k8s.io/api/core/v1"
        self.prefix = openapi_prefix  # e.g. "io.k8s.api.core.v1"
        self.types = {}             # name -> dict(kind=struct|named|alias|interface, ...)
        self.order = []             # struct names in declaration order, for emission
        self.methods = {}           # type name -> set of method names
        self.emit = set()           # struct names to emit


def openapi_prefix(pkgpath):
    if pkgpath.startswith("k8s.io/api/"):
        return "io.k8s.api." + pkgpath[len("k8s.io/api/"):].replace("/", ".")
    if pkgpath.startswith("k8s.io/apimachinery/"):
        return "io.k8s.apimachinery." + pkgpath[len("k8s.io/apimachinery/"):].replace("/", ".")
    return pkgpath.replace("/", ".")


PKGS = {}


def parse_imports(code):
    imports = {}
    for m in re.finditer(r"^import\s*\((.*?)^\)", code, re.S | re.M):
        for line in m.group(1).splitlines():
            mm = re.match(r'\s*([\w.]+\s+)?"([^"]+)"', line)
            if mm:
                path = mm.group(2)
                alias = (mm.group(1) or "").strip() or path.rsplit("/", 1)[-1]
                imports[alias] = path
    for m in re.finditer(r'^import\s+([\w.]+\s+)?"([^"]+)"', code, re.M):
        path = m.group(2)
        alias = (m.group(1) or "").strip() or path.rsplit("/", 1)[-1]
        imports[alias] = path
    return imports


FIELD_RE = re.compile(r"^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s+(\S.*?)\s*$")
EMBED_RE = re.compile(r"^(\*?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\s*$")
METHOD_RE = re.compile(r"^func\s*\(\s*(?:\w+\s+)?\*?\s*([A-Za-z_]\w*)\s*\)\s*([A-Za-z_]\w*)\s*\(")


def parse_struct_body(lines, where):
    """lines: list of (code_line, masked_line).  Returns list of field dicts."""
    fields = []
    depth = 0
    for code, masked in lines:
        s = code.strip()
        ms = masked.strip()
        if depth > 0:
            depth += ms.count("{") - ms.count("}")
            continue
        if not s:
            continue
        opens = ms.count("{") - ms.count("}")
        # split the tag (backquoted or double-quoted string at the end)
        tag = ""
        m = re.search(r"(`[^`]*`|\"(?:[^\"\\]|\\.)*\")\s*$", s)
        if m:
            tag = m.group(1)[1:-1]
            if m.group(1).startswith('"'):
                tag = bytes(tag, "utf-8").decode("unicode_escape")
            s = s[:m.start()].strip()
        if opens > 0:
            depth = opens
            fm = FIELD_RE.match(s)
            if fm:
                fields.append(dict(names=[fm.group(1)], type=("anonstruct",), tag=tag, embedded=False, raw=code.strip()))
                warn("%s: anonymous struct/interface type in field: %s" % (where, code.strip()))
            else:
                warn("%s: cannot parse field line: %s" % (where, code.strip()))
            continue
        em = EMBED_RE.match(s)
        if em:
            fields.append(dict(names=None, type=parse_type(em.group(1)), tag=tag, embedded=True, raw=code.strip()))
            continue
        fm = FIELD_RE.match(s)
        if fm:
            names = [x.strip() for x in fm.group(1).split(",")]
            t = parse_type(fm.group(2))
            if t[0] == "unknown":
                warn("%s: cannot parse type %r in line: %s" % (where, fm.group(2), code.strip()))
            fields.append(dict(names=names, type=t, tag=tag, embedded=False, raw=code.strip()))
            continue
        warn("%s: cannot parse field line: %s" % (where, code.strip()))
    return fields


def parse_file(pkg, path, src, emit):
    if not build_ok(src):
        print("INFO: skipping %s (build constraint)" % path, file=sys.stderr)
        return
    code, masked = strip_comments(src)
    imports = parse_imports(code)
    clines = code.split("\n")
    mlines = masked.split("\n")
    depth = 0          # brace depth
    in_type_block = False
    i = 0
    n = len(clines)

    def add_type(name, rhs, body_start):
        """rhs is the text after the name on the declaration line.
        Returns the index of the last consumed line."""
        nonlocal i
        where = "%s %s" % (path, name)
        rhs_code = rhs
        if re.match(r"\[", rhs_code) and not rhs_code.startswith("[]") and not re.match(r"\[\w*\]", rhs_code):
            warn("%s: generic type declaration skipped" % where)
        alias = False
        if rhs_code.startswith("="):
            alias = True
            rhs_code = rhs_code[1:].strip()
        if re.match(r"struct\s*\{", rhs_code):
            # collect body
            mrhs = mlines[i][mlines[i].find("struct"):] if "struct" in mlines[i] else rhs_code
            d = mrhs.count("{") - mrhs.count("}")
            body = []
            if d > 0:
                j = i + 1
                while j < n:
                    ml = mlines[j]
                    dd = ml.count("{") - ml.count("}")
                    if d + dd <= 0:
                        # closing line; anything before the brace would be a field (not gofmt style)
                        pre = clines[j][:clines[j].rfind("}")]
                        if pre.strip():
                            body.append((pre, mlines[j][:len(pre)]))
                        break
                    body.append((clines[j], ml))
                    d += dd
                    j += 1
                i = j
            fields = parse_struct_body(body, where)
            pkg.types[name] = dict(kind="struct", fields=fields, imports=imports, file=path)
            if name not in pkg.order:
                pkg.order.append(name)
            if emit and name[0].isupper():
                pkg.emit.add(name)
        elif re.match(r"interface\s*\{", rhs_code):
            mrhs = mlines[i][mlines[i].find("interface"):]
            d = mrhs.count("{") - mrhs.count("}")
            j = i
            while d > 0 and j + 1 < n:
                j += 1
                d += mlines[j].count("{") - mlines[j].count("}")
            i = j
            pkg.types[name] = dict(kind="interface", imports=imports, file=path)
        else:
            t = parse_type(rhs_code)
            if t[0] in ("unknown",):
                warn("%s: cannot parse type declaration: %s" % (where, rhs))
            pkg.types[name] = dict(kind="alias" if alias else "named", type=t, imports=imports, file=path)
            if not alias and t[0] == "named":
                # `type List metav1.List`: may be a struct type defined by another struct type
                if name not in pkg.order:
                    pkg.order.append(name)
                if emit and name[0].isupper():
                    pkg.emit.add(name)

    while i < n:
        c = clines[i]
        m_ = mlines[i]
        s = c.strip()
        if depth == 0 and not in_type_block:
            m = re.match(r"^type\s*\(\s*$", s)
            if m:
                in_type_block = True
                i += 1
                continue
            m = re.match(r"^type\s+([A-Za-z_]\w*)\s+(.*)$", s)
            if m:
                add_type(m.group(1), m.group(2).strip(), i)
                i += 1
                continue
            mm = METHOD_RE.match(s)
            if mm:
                pkg.methods.setdefault(mm.group(1), set()).add(mm.group(2))
        elif depth == 0 and in_type_block:
            if s == ")":
                in_type_block = False
                i += 1
                continue
            m = re.match(r"^([A-Za-z_]\w*)\s+(.*)$", s)
            if m:
                add_type(m.group(1), m.group(2).strip(), i)
                i += 1
                continue
            if s:
                warn("%s: cannot parse line in type block: %s" % (path, s))
        depth += m_.count("{") - m_.count("}")
        i += 1


def skip_file(path):
    b = os.path.basename(path)
    return (not b.endswith(".go") or b.endswith("_test.go") or b.startswith("zz_generated")
            or b.startswith("generated.") or b.endswith("_generated.go") or b.endswith(".pb.go"))


def load_pkg(gitdir, rev, files_prefix, pkgpath, emit_files):
    """emit_files: None => emit structs from every parsed file; else a set of basenames."""
    pkg = PKGS.setdefault(pkgpath, Pkg(pkgpath, openapi_prefix(pkgpath)))
    paths = [p for p in ls_files(gitdir, rev, files_prefix + "/")
             if os.path.dirname(p) == files_prefix and not skip_file(p)]
    # parse the files that are emitted first so that duplicate declarations
    # (build-tag variants) resolve to the default build
    for p in sorted(paths):
        src = show(gitdir, rev, p)
        emit = emit_files is None or os.path.basename(p) in emit_files
        parse_file(pkg, p, src, emit)
    return pkg


# ----------------------------------------------------------------------------
# resolution


def lookup(pkg, tref, imports):
    """Resolve ('named', q, name) to (Pkg or None, name).  Returns (None, None) when unknown."""
    _, q, name = tref
    if q is None:
        if name in pkg.types:
            return pkg, name
        return None, name
    path = imports.get(q)
    if path is None:
        return None, None
    return PKGS.get(path), name


def is_custom(pkg, name, seen=None):
    t = pkg.types.get(name)
    meths = pkg.methods.get(name, set())
    if "MarshalJSON" in meths or "MarshalText" in meths:
        return True
    if t is None:
        return False
    if t["kind"] == "alias":
        tt = t["type"]
        if tt[0] == "named":
            p2, n2 = lookup(pkg, tt, t["imports"])
            if p2 is not None and n2 in p2.types:
                return is_custom(p2, n2)
        return False
    if t["kind"] == "struct":
        # method promotion from embedded fields
        seen = seen or set()
        if (pkg.key, name) in seen:
            return False
        seen.add((pkg.key, name))
        for f in t["fields"]:
            if f["embedded"]:
                tt = f["type"][1] if f["type"][0] == "ptr" else f["type"]
                if tt[0] != "named":
                    continue
                if (tt[1], tt[2]) in STD_TYPES and STD_TYPES[(tt[1], tt[2])][0] == "custom":
                    return True
                p2, n2 = lookup(pkg, tt, t["imports"])
                if p2 is not None and n2 in p2.types and is_custom(p2, n2, seen):
                    return True
    return False


def has_iszero(pkg, name):
    return "IsZero" in pkg.methods.get(name, set())


def describe(pkg, tref, imports, where, depth=0):
    """Return (kind, openapi_name_or_None, elem_desc_or_None, is_ptr)."""
    if depth > 30:
        warn("%s: type resolution too deep" % where)
        return ("unknown", None, None, False)
    k = tref[0]
    if k == "ptr":
        kind, nm, el, _ = describe(pkg, tref[1], imports, where, depth + 1)
        return (kind, nm, el, True)
    if k in ("slice", "array"):
        inner = tref[1] if k == "slice" else tref[2]
        return ("slice", None, elem_desc(pkg, inner, imports, where, depth + 1, in_slice=True), False)
    if k == "map":
        return ("map", None, elem_desc(pkg, tref[2], imports, where, depth + 1), False)
    if k == "interface":
        return ("interface", None, None, False)
    if k == "anonstruct":
        return ("struct", "<anonymous>", None, False)
    if k in ("func", "chan", "unknown"):
        warn("%s: unsupported type %r" % (where, tref))
        return ("unknown", None, None, False)
    # named
    _, q, name = tref
    if q is None and name not in pkg.types and name in BUILTIN_KIND:
        return (BUILTIN_KIND[name], None, None, False)
    if q is not None and (q, name) in STD_TYPES and imports.get(q) in ("time", "encoding/json"):
        kind, nm = STD_TYPES[(q, name)]
        return (kind, nm, None, False)
    p2, n2 = lookup(pkg, tref, imports)
    if p2 is None or n2 not in p2.types:
        warn("%s: unresolved type %s%s (import %s)" % (where, (q + ".") if q else "", name,
                                                       imports.get(q) if q else pkg.key))
        return ("unknown", None, None, False)
    t = p2.types[n2]
    oname = p2.prefix + "." + n2
    if is_custom(p2, n2):
        if t["kind"] == "alias":
            tt = t["type"]
            return describe(p2, tt, t["imports"], where, depth + 1)
        return ("custom", oname, None, False)
    if t["kind"] == "struct":
        return ("struct", oname, None, False)
    if t["kind"] == "interface":
        return ("interface", oname, None, False)
    # named / alias of another type: the JSON kind is that of the underlying type
    kind, nm, el, ptr = describe(p2, t["type"], t["imports"], where, depth + 1)
    if t["kind"] == "named" and kind in ("struct", "custom") and not ptr:
        # a defined type over a struct type has the same fields but none of its methods;
        # it is emitted under its own name (see struct_rows)
        if kind == "custom":
            warn("%s: defined type %s over custom type %s loses MarshalJSON" % (where, oname, nm))
        return ("struct", oname, None, False)
    return (kind, nm, el, ptr)


def elem_desc(pkg, tref, imports, where, depth, in_slice=False):
    if in_slice and tref[0] == "named" and tref[1] is None and tref[2] in ("byte", "uint8") \
            and tref[2] not in pkg.types:
        return "bytes"
    kind, nm, el, ptr = describe(pkg, tref, imports, where, depth)
    d = kind
    if kind in ("struct", "custom") and nm:
        d = kind + ":" + nm
    elif kind in ("slice", "map") and el:
        d = kind + ":" + el
    return ("*" if ptr else "") + d


def json_tag(tag):
    for m in re.finditer(r'(\w+):"((?:[^"\\]|\\.)*)"', tag):
        if m.group(1) == "json":
            return m.group(2)
    return None


def field_rows(pkg, sname):
    t = pkg.types[sname]
    imports = t["imports"]
    where = "%s.%s" % (pkg.prefix, sname)
    rows = []
    for f in t["fields"]:
        jt = json_tag(f["tag"])
        if jt is None and f["tag"].strip() and "json" in f["tag"]:
            warn("%s: cannot parse struct tag: %s" % (where, f["raw"]))
        opts = []
        jname = None
        if jt is not None:
            parts = jt.split(",")
            jname = parts[0]
            opts = parts[1:]
            if jt == "-":
                continue  # json:"-" => never encoded
        flags = ""
        kind, nm, el, ptr = describe(pkg, f["type"], imports, where + " " + f["raw"], 0)
        if ptr:
            flags += "p"
        if "omitempty" in opts:
            flags += "o"
        if "omitzero" in opts:
            flags += "z"
        unknown_opts = [o for o in opts if o not in ("omitempty", "omitzero", "inline", "string", "")]
        if unknown_opts:
            warn("%s: unknown json options %s: %s" % (where, unknown_opts, f["raw"]))
        if "string" in opts:
            warn("%s: ',string' json option: %s" % (where, f["raw"]))
        if f["embedded"]:
            base = f["type"][1] if f["type"][0] == "ptr" else f["type"]
            gname = base[2]
            if not jname and kind in ("struct",):
                rows.append((where, "*inline*", flags or "-", kind, nm or ""))
                continue
            if not jname and kind == "custom":
                # encoding/json: an embedded type with MarshalJSON makes the outer type custom
                rows.append((where, "*inline*", flags or "-", kind, nm or ""))
                continue
            if not gname[0].isupper() and not jname:
                continue  # unexported non-struct embedded field: ignored by encoding/json
            if not jname:
                jname = gname
                if kind not in ("struct", "custom"):
                    warn("%s: embedded non-struct field without json name (encoded as %r): %s"
                         % (where, gname, f["raw"]))
            rows.append((where, jname, flags or "-", kind, elem_col(kind, nm, el)))
            continue
        for goname in f["names"]:
            if not goname[0].isupper():
                continue  # unexported: ignored by encoding/json
            name = jname if jname else goname
            if jt is None:
                warn("%s: exported field without json tag (encoded as %r): %s" % (where, goname, f["raw"]))
            rows.append((where, name, flags or "-", kind, elem_col(kind, nm, el)))
    return rows


def struct_rows(pkg, sname, oname, depth=0):
    """Rows for the struct type sname of pkg, emitted under the OpenAPI name oname."""
    t = pkg.types[sname]
    if t["kind"] == "struct":
        rows = field_rows(pkg, sname)
        if not rows:
            return [(oname, "*empty*", "-", "struct", "")]
        return [(oname,) + r[1:] for r in rows]
    if t["kind"] == "named" and t["type"][0] == "named" and depth < 10:
        p2, n2 = lookup(pkg, t["type"], t["imports"])
        if p2 is not None and n2 in p2.types and not is_custom(p2, n2):
            return struct_rows(p2, n2, oname, depth + 1)
    return []


def elem_col(kind, nm, el):
    if kind in ("struct", "custom"):
        return nm or ""
    if kind in ("slice", "map"):
        return el or ""
    return ""


# ----------------------------------------------------------------------------
# main


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    api, am = argv[1], argv[2]
    rev = "HEAD"
    if "--rev" in argv:
        rev = argv[argv.index("--rev") + 1]

    # apimachinery packages
    AM = "k8s.io/apimachinery/"
    load_pkg(am, rev, "pkg/apis/meta/v1", AM + "pkg/apis/meta/v1", None)
    load_pkg(am, rev, "pkg/util/intstr", AM + "pkg/util/intstr", {"intstr.go"})
    load_pkg(am, rev, "pkg/api/resource", AM + "pkg/api/resource", {"quantity.go"})
    load_pkg(am, rev, "pkg/runtime", AM + "pkg/runtime", {"types.go"})
    load_pkg(am, rev, "pkg/types", AM + "pkg/types", set())

    # k8s.io/api group/version packages: every directory <group>/<version> holding a types.go
    for p in sorted(ls_files(api, rev)):
        if p.endswith("/types.go") and p.count("/") == 2:
            d = os.path.dirname(p)
            load_pkg(api, rev, d, "k8s.io/api/" + d, None)

    rows = []
    custom_types = []
    iszero_types = []
    for key in sorted(PKGS):
        pkg = PKGS[key]
        for sname in pkg.order:
            if sname not in pkg.emit:
                continue
            oname = pkg.prefix + "." + sname
            if is_custom(pkg, sname):
                custom_types.append(oname)
                rows.append((oname, "*custom*", "-", "custom", oname))
                continue
            rows.extend(struct_rows(pkg, sname, oname))
        for tname in sorted(pkg.types):
            if has_iszero(pkg, tname):
                iszero_types.append(pkg.prefix + "." + tname)

    # stable sort by struct name keeps the declared field order
    rows.sort(key=lambda r: r[0])

    def head(gitdir):
        h = git(gitdir, "log", "-1", "--format=%H %cI", rev).strip()
        return h

    out = sys.stdout
    out.write("# Go encoding/json field table generated by kruise-sim/data/go_fields.py from "
              "github.com/kubernetes/api@%s and github.com/kubernetes/apimachinery@%s\n"
              % (head(api), head(am)))
    out.write("# columns: struct_openapi_name\tjson_name\tflags\tkind\telement_type\n")
    out.write("# flags: p=Go pointer, o=omitempty, z=omitzero, '-'=none. kind is the pointee's kind for pointers.\n")
    out.write("# kinds: string int bool float slice map struct custom (own MarshalJSON) interface unknown.\n")
    out.write("# element_type: struct/custom -> OpenAPI name; slice/map -> element kind, 'kind:Name' for struct/custom,\n")
    out.write("#   'slice:...'/'map:...' for nested containers, 'bytes' for a []byte (base64 string) slice,\n")
    out.write("#   a leading '*' when the element is a pointer. json_name '*inline*' = embedded struct whose fields are\n")
    out.write("#   promoted (element_type = its OpenAPI name); '*custom*' row = type marshals itself via MarshalJSON;\n")
    out.write("#   '*empty*' row = struct without encoded fields (always {}).\n")
    out.write("# Go semantics reminder: omitempty omits false/0/\"\"/nil pointer/empty or nil slice & map, never a\n")
    out.write("#   non-pointer struct (incl. custom structs); omitzero omits a value whose IsZero() is true if the type\n")
    out.write("#   has one (also pointer receiver), else the all-zero value; a nil slice/map without omitempty encodes as null.\n")
    out.write("# all custom types listed here are Go structs. types with IsZero(): %s\n" % " ".join(iszero_types))
    for r in rows:
        out.write("\t".join(r) + "\n")

    nstructs = len(set(r[0] for r in rows))
    print("INFO: %d rows, %d structs (%d custom), %d warnings" % (len(rows), nstructs, len(custom_types),
                                                                 len(WARNINGS)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
