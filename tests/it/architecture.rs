//! The shape of the code, checked: every module of `src/` sits in one layer
//! of the table in ARCHITECTURE.md ("Layers"), no module imports one from a
//! layer above its own, modules of one layer import each other without a
//! cycle, only `policy` and `args` read `cli`, no source file is over
//! 800 lines, no function in `src/` over 120, and no Linux-only call is
//! made outside `src/sys/` but for the exceptions listed ("Platform
//! calls"). Imports are read from the text: `crate::` paths (groups
//! included; a path to an item of the crate root counts as `lib`), `super::`
//! and `self::` paths resolved from the file's place, and bare paths through
//! a child module the file declares (`mode::http::main` in `lib.rs`). A path
//! the table cannot place is itself a problem, never skipped. The checkers
//! are tested on planted trees as well as on `src/`.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;

/// The longest function in `src/`, in lines from its signature to its
/// closing brace: past this, a function is split into its steps.
const MAX_FN_LINES: usize = 120;

/// Modules that may import `cli`: it is the flags, and nothing below the
/// validation knows about clap.
const CLI_READERS: &[&str] = &["policy", "args"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The layer table of ARCHITECTURE.md: (layer name, modules), top layer first.
fn layers() -> Vec<(String, Vec<String>)> {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    layer_table(&doc)
}

/// The layer table in a document's "## Layers" section.
fn layer_table(doc: &str) -> Vec<(String, Vec<String>)> {
    let section = doc
        .split("\n## Layers\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a '## Layers' section");
    let rows: Vec<(String, Vec<String>)> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // header and separator
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = cells[1].trim_matches('*').to_string();
            let modules = cells[2]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            (name, modules)
        })
        .collect();
    assert!(
        rows.len() >= 3,
        "the layer table has too few rows: {rows:?}"
    );
    rows
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// `src/state/rules/pace.rs` → `["state", "rules", "pace"]`; `src/lib.rs` →
/// `["lib"]`; `mod.rs` names its directory.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The table entry a path falls under: the longest module path that is a
/// prefix of it.
fn entry_of<'a>(path: &[String], entries: &'a [String]) -> Option<&'a String> {
    entries
        .iter()
        .filter(|e| {
            let segs: Vec<&str> = e.split("::").collect();
            segs.len() <= path.len() && segs.iter().zip(path).all(|(a, b)| a == b)
        })
        .max_by_key(|e| e.split("::").count())
}

/// One use tree from `text[at..]` (just past `crate::` or a leading
/// `super::`), as the paths it names: `a::{b, c::D}` → `a::b`, `a::c::D`.
fn use_tree(text: &[u8], mut at: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix;
    loop {
        while text.get(at).is_some_and(|c| c.is_ascii_whitespace()) {
            at += 1;
        }
        if text.get(at) == Some(&b'{') {
            at += 1;
            loop {
                at = use_tree(text, at, path.clone(), out);
                while text
                    .get(at)
                    .is_some_and(|c| c.is_ascii_whitespace() || *c == b',')
                {
                    at += 1;
                }
                if text.get(at) != Some(&b'{') && !is_ident(text.get(at)) {
                    break;
                }
            }
            if text.get(at) == Some(&b'}') {
                at += 1;
            }
            return at;
        }
        let start = at;
        while is_ident(text.get(at)) {
            at += 1;
        }
        if start == at {
            break;
        }
        let seg = String::from_utf8_lossy(&text[start..at]).into_owned();
        if seg != "self" {
            path.push(seg);
        }
        if text[at..].starts_with(b"::") {
            at += 2;
        } else {
            break;
        }
    }
    out.push(path);
    at
}

fn is_ident(c: Option<&u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// The modules a file declares with `mod NAME` (inline test modules too),
/// which its code may name by a bare path.
fn declared_children(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("pub(crate) ")
                .or_else(|| l.strip_prefix("pub "))
                .unwrap_or(l);
            let name = l.strip_prefix("mod ")?;
            let end = name.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            Some(name[..end].to_string())
        })
        .collect()
}

/// The crate paths a file refers to, with their line numbers: `crate::`,
/// `super::` and `self::` paths resolved from the file's place (inside
/// `mod tests`, `super` is the file's own module), and bare paths through a
/// module the file declares. `top` are the crate root's modules: a
/// `crate::` path through none of them names an item of the crate root
/// itself, `lib`.
fn references(
    src: &Path,
    file: &Path,
    top: &BTreeSet<String>,
) -> Vec<(usize, String, Vec<String>)> {
    let module = module_of(src, file);
    let source = std::fs::read_to_string(file).expect("readable source");
    let lines: Vec<&str> = source.lines().collect();
    // Comments out, lines kept, so that a group may span lines.
    let code: String = lines
        .iter()
        .map(|l| format!("{}\n", l.split("//").next().unwrap_or("")))
        .collect();
    // Where the file's test module starts (`mod tests`, `pub(crate) mod
    // tests`, at the start of a line).
    let tests_from = code
        .match_indices("mod tests")
        .find(|(i, _)| {
            let line_start = code[..*i].rfind('\n').map_or(0, |n| n + 1);
            matches!(
                &code[line_start..*i],
                "" | "pub " | "pub(crate) " | "pub(super) "
            )
        })
        .map_or(usize::MAX, |(i, _)| i);
    // The crate root's children sit at the top, not under `lib`.
    let own: Vec<String> = if module == ["lib"] {
        Vec::new()
    } else {
        module.clone()
    };
    let children = declared_children(&code);
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut starts: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for kind in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(kind) {
            // Only where a path starts: not `super::super::`, not `my_crate::`.
            if i > 0 && (is_ident(bytes.get(i - 1)) || bytes[i - 1] == b':') {
                continue;
            }
            let mut at = i + kind.len();
            let mut start = Vec::new();
            if kind != "crate::" {
                let mut here = own.clone();
                if i > tests_from {
                    here.push("tests".into());
                }
                if kind == "super::" {
                    here.pop();
                }
                while code[at..].starts_with("super::") {
                    here.pop();
                    at += "super::".len();
                }
                start = here;
            }
            starts.push((i, at, start));
        }
    }
    for child in &children {
        let bare = format!("{child}::");
        for (i, _) in code.match_indices(&bare) {
            if i > 0 && (is_ident(bytes.get(i - 1)) || bytes[i - 1] == b':') {
                continue;
            }
            starts.push((i, i, own.clone()));
        }
    }
    for (i, at, start) in starts {
        let mut paths = Vec::new();
        use_tree(bytes, at, start, &mut paths);
        let line = code[..i].matches('\n').count();
        for mut p in paths {
            if p.first().is_none_or(|first| !top.contains(first)) {
                p = vec!["lib".to_string()];
            }
            out.push((line + 1, lines[line].trim().to_string(), p));
        }
    }
    out.sort();
    out
}

/// The crate root's modules, from `lib.rs`.
fn top_modules(src: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    declared_children(&lib)
}

/// Everything wrong with the shape of the crate at `src` by the layer
/// table `layers` (top layer first): one line each.
fn problems(src: &Path, layers: &[(String, Vec<String>)]) -> Vec<String> {
    // Rank 0 is the bottom layer.
    let rank: BTreeMap<String, (usize, String)> = layers
        .iter()
        .rev()
        .enumerate()
        .flat_map(|(r, (name, mods))| mods.iter().map(move |m| (m.clone(), (r, name.clone()))))
        .collect();
    let entries: Vec<String> = rank.keys().cloned().collect();
    let top = top_modules(src);
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let base = src.parent().unwrap_or(src);
    for file in rust_files(src) {
        let shown = file
            .strip_prefix(base)
            .unwrap_or(&file)
            .display()
            .to_string();
        // main.rs is the binary's own crate: it calls the library only.
        if file == src.join("main.rs") {
            continue;
        }
        let module = module_of(src, &file);
        let Some(own) = entry_of(&module, &entries) else {
            problems.push(format!(
                "{shown}: module `{}` is in no layer: add it to the table in ARCHITECTURE.md",
                module.join("::")
            ));
            continue;
        };
        let (own_rank, own_layer) = &rank[own];
        for (line, text, path) in references(src, &file, &top) {
            let Some(target) = entry_of(&path, &entries) else {
                problems.push(format!(
                    "{shown}:{line}: `{}` is in no layer of the table: {text}",
                    path.join("::")
                ));
                continue;
            };
            if target == own {
                continue;
            }
            let (rank_to, layer_to) = &rank[target];
            if rank_to > own_rank {
                problems.push(format!(
                    "{shown}:{line}: `{own}` ({own_layer}) imports `{}` ({layer_to}), a layer above: {text}",
                    path.join("::")
                ));
            }
            if target == "cli" && !CLI_READERS.contains(&own.as_str()) {
                problems.push(format!(
                    "{shown}:{line}: only {CLI_READERS:?} read the flags; `{own}` imports `{}`",
                    path.join("::")
                ));
            }
            edges.entry(own.clone()).or_default().insert(target.clone());
        }
    }
    if let Some(cycle) = find_cycle(&edges) {
        problems.push(format!(
            "modules import each other in a circle: {}",
            cycle.join(" → ")
        ));
    }
    problems
}

#[test]
fn no_module_imports_one_from_a_layer_above_its_own() {
    let problems = problems(&root().join("src"), &layers());
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// A cycle in the import graph, as the modules along it, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == node) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_source_file_is_over_800_lines() {
    let mut long = Vec::new();
    for dir in ["src", "tests", "examples", "bench"] {
        for file in rust_files(&root().join(dir)) {
            let lines = std::fs::read_to_string(&file)
                .expect("readable")
                .lines()
                .count();
            if lines > MAX_LINES {
                let shown = file
                    .strip_prefix(root())
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                long.push(format!("{shown}: {lines} lines (split it by concern)"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// The functions of `code` longer than `MAX_FN_LINES`, as (name, first
/// line, lines): a function runs from its `fn` line to the first line that
/// is its indentation and a closing brace (rustfmt's layout).
fn long_functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut long = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let Some(at) = body.find("fn ") else { continue };
        let before = &body[..at];
        let qualifiers = [
            "pub",
            "pub(crate)",
            "pub(super)",
            "async",
            "const",
            "unsafe",
        ];
        if !before.split_whitespace().all(|w| qualifiers.contains(&w))
            || body.trim_end().ends_with(';')
        {
            continue;
        }
        let name: String = body[at + 3..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            let count = end + 2;
            if count > MAX_FN_LINES {
                long.push((name, i + 1, count));
            }
        }
    }
    long
}

#[test]
fn no_function_in_src_is_over_120_lines() {
    let mut long = Vec::new();
    for file in rust_files(&root().join("src")) {
        let code = std::fs::read_to_string(&file).expect("readable");
        for (name, line, count) in long_functions(&code) {
            let shown = file
                .strip_prefix(root())
                .unwrap_or(&file)
                .display()
                .to_string();
            long.push(format!(
                "{shown}:{line}: fn {name} has {count} lines (one method per step)"
            ));
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// The function reader, on a planted file: a function one line too long is
/// seen, with its length; one of exactly the limit, a declaration and a
/// nested one are not.
#[test]
fn the_function_reader_measures_from_fn_to_its_brace() {
    let body = "        x();\n".repeat(MAX_FN_LINES - 2);
    let code = format!(
        "trait T {{\n    fn decl(&self);\n}}\n\npub(crate) async fn long() {{\n{body}}}\n\nfn short() {{\n    fn inner() {{}}\n}}\n"
    );
    assert_eq!(long_functions(&code), []);
    let longer = code.replace("fn long() {\n", "fn long() {\n    y();\n");
    assert_eq!(
        long_functions(&longer),
        [("long".to_string(), 5, MAX_FN_LINES + 1)]
    );
}

/// The checker itself: a known upward import, a group and `super::` paths
/// are all seen.
#[test]
fn the_import_reader_sees_groups_and_super_paths() {
    let mut out = Vec::new();
    use_tree(b"a::{b, c::{D, e::F}, self}", 0, vec![], &mut out);
    let shown: Vec<String> = out.iter().map(|p| p.join("::")).collect();
    assert_eq!(shown, ["a::b", "a::c::D", "a::c::e::F", "a"]);
    let entries: Vec<String> = ["sim", "sim::runs", "state::rules"]
        .map(String::from)
        .to_vec();
    let path = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    assert_eq!(
        entry_of(&path("sim::runs::heading"), &entries).map(String::as_str),
        Some("sim::runs")
    );
    assert_eq!(
        entry_of(&path("sim::Fleet"), &entries).map(String::as_str),
        Some("sim")
    );
    assert_eq!(entry_of(&path("state::Store"), &entries), None);
    let src = root().join("src");
    let top = top_modules(&src);
    let refs = |file: &str| -> Vec<String> {
        references(&src, &src.join(file), &top)
            .into_iter()
            .map(|(_, _, p)| p.join("::"))
            .collect()
    };
    // A pure module of the simulator names the layers it reads from.
    let fleet = refs("sim/fleet.rs");
    assert!(
        fleet.iter().any(|p| p == "state::rules::Budget"),
        "{fleet:?}"
    );
    let session = refs("state/session.rs");
    assert!(
        session.iter().any(|p| p.starts_with("state::rules")),
        "{session:?}"
    );
    // `super::*` inside a `pub(crate) mod tests` is the file's own module,
    // not the crate root.
    let backoff = refs("backoff.rs");
    assert!(!backoff.iter().any(|p| p == "lib"), "{backoff:?}");
    // The crate root names its modules by bare paths.
    let lib = refs("lib.rs");
    assert!(lib.iter().any(|p| p == "mode::command::main"), "{lib:?}");
    assert!(lib.iter().any(|p| p == "args::config"), "{lib:?}");
}

/// A crate planted in a scratch directory: `lib.rs` and `probe.rs`, and a
/// layer table that puts both in one layer.
fn planted(probe: &str) -> Vec<String> {
    let dir = crate::util::scratch();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).expect("src");
    let lib = "//! The root.\n\nmod probe;\n\npub fn drive() {}\n\npub fn main_entry() {\n    probe::main();\n}\n";
    std::fs::write(src.join("lib.rs"), lib).expect("lib.rs");
    std::fs::write(src.join("probe.rs"), probe).expect("probe.rs");
    let table = "# Architecture\n\n## Layers\n\n| layer | modules | what |\n|---|---|---|\n\
                 | wiring | `lib`, `probe` | the modes |\n| domain | `rules` | pure |\n\
                 | basics | `human` | pure |\n";
    problems(&src, &layer_table(table))
}

/// The circle the crate root and HTTP mode once made: the root calls the
/// mode by a bare path, the mode calls back into an item of the root.
#[test]
fn a_planted_circle_through_a_crate_root_item_is_found() {
    let circle = planted("//! A mode.\n\npub fn main() {\n    crate::drive();\n}\n");
    assert!(
        circle
            .iter()
            .any(|p| p.contains("in a circle") && p.contains("lib") && p.contains("probe")),
        "{circle:?}"
    );
    // The same crate without the call back has nothing wrong.
    let straight = planted("//! A mode.\n\npub fn main() {}\n");
    assert!(straight.is_empty(), "{straight:?}");
}

/// Calls (and their flags) only Linux has: outside `src/sys/` they would
/// keep retry from building on another Unix. Matched in code, not in
/// comments; test code is not scanned (it runs on Linux).
const LINUX_ONLY: &[&str] = &[
    "prctl",
    "PR_SET_",
    "pidfd",
    "CLONE_",
    "libc::clone",
    "__WCLONE",
    "libc::SYS_",
    "\"/proc",
    "O_TMPFILE",
    "O_PATH",
    "AT_EMPTY_PATH",
    "F_SETPIPE_SZ",
    "PROC_SUPER_MAGIC",
    "getxattr",
    "malloc_trim",
    "pthread_getattr_np",
    "SIGRTMIN",
    "SIGRTMAX",
    // Found by building for macOS and FreeBSD: Linux's (or glibc's) only.
    "libc::tee",
    "SPLICE_F",
    "__errno_location",
    "pipe2",
    "stat::major",
    "stat::minor",
    "thread::set_name",
    "MAP_STACK",
];

/// Files outside `src/sys/` that may name a Linux-only token, and which
/// (ARCHITECTURE.md, "Platform calls", says why).
const LINUX_EXCEPTIONS: &[(&str, &[&str])] = &[("src/signame.rs", &["SIGRTMIN", "SIGRTMAX"])];

/// Every Linux-only token in the code of `src/` outside `src/sys/` and the
/// listed exceptions, as `file:line: token: text`.
fn linux_only_calls(src: &Path) -> Vec<String> {
    let base = src.parent().unwrap_or(src);
    let mut found = Vec::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).expect("under src");
        if rel.starts_with("sys")
            || rel.file_name().is_some_and(|n| n == "tests.rs")
            || rel.iter().any(|c| c == "tests")
        {
            continue;
        }
        let shown = file
            .strip_prefix(base)
            .unwrap_or(&file)
            .display()
            .to_string();
        let allowed: &[&str] = LINUX_EXCEPTIONS
            .iter()
            .find(|(f, _)| *f == shown)
            .map_or(&[], |(_, t)| t);
        let source = std::fs::read_to_string(&file).expect("readable source");
        for (n, line) in source.lines().enumerate() {
            // The test module, at the start of a line, ends the shipped code.
            if line.starts_with("mod tests") {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            for token in LINUX_ONLY.iter().filter(|t| !allowed.contains(t)) {
                if code.contains(token) {
                    found.push(format!("{shown}:{}: {token}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn linux_only_calls_are_made_in_src_sys_only() {
    let found = linux_only_calls(&root().join("src"));
    assert!(
        found.is_empty(),
        "Linux-only calls outside src/sys/ (move each behind crate::sys):\n{}",
        found.join("\n")
    );
}

/// The scan itself, on a planted tree: a call in a module is caught with
/// its line; the same call in `src/sys/`, in a comment, in a test module
/// and in a `tests.rs` file is not.
#[test]
fn a_planted_linux_only_call_is_caught() {
    let dir = crate::util::scratch();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("sys")).expect("src/sys");
    let call = "    let _ = nix::sys::prctl::set_child_subreaper(true);\n";
    let probe = format!(
        "//! A module.\n\n// prctl in a comment is fine.\npub fn start() {{\n{call}}}\n\n#[cfg(test)]\nmod tests {{\n    const P: &str = \"/proc/self/status\";\n}}\n"
    );
    std::fs::write(src.join("probe.rs"), probe).expect("probe.rs");
    std::fs::write(
        src.join("sys/linux.rs"),
        format!("pub fn f() {{\n{call}}}\n"),
    )
    .expect("linux.rs");
    std::fs::write(src.join("tests.rs"), "const P: &str = \"/proc/locks\";\n").expect("tests.rs");
    let found = linux_only_calls(&src);
    assert_eq!(
        found,
        [format!("src/probe.rs:5: prctl: {}", call.trim())],
        "{found:?}"
    );
    // Moved behind the interface, the module is clean.
    std::fs::write(
        src.join("probe.rs"),
        "pub fn start() {\n    crate::sys::become_subreaper();\n}\n",
    )
    .expect("probe.rs");
    assert_eq!(linux_only_calls(&src), Vec::<String>::new());
}
