//! The folders of `src/` are layers: a module may use the modules below it in the order
//! docs/DESIGN.md writes down (its `layers:` line, from the ground up), never one above it nor
//! another of its own layer — except the crossings that line's `crossings:` names, each a debt
//! written down where the layers are. Reads the source: every `crate::X` path and `super::`
//! path that leaves its top-level module, in code (comments, `#[cfg(test)]` modules and the
//! public re-exports that put a name where the specification has it aside).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The order and the crossings as docs/DESIGN.md writes them.
struct Order {
    /// Each top-level module's layer, from 0 (the ground).
    layer: BTreeMap<String, usize>,
    crossings: BTreeSet<(String, String)>,
}

fn order() -> Order {
    let design = std::fs::read_to_string(root().join("docs/DESIGN.md")).unwrap();
    let line = |key: &str| {
        design
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("docs/DESIGN.md has no `{key}` line"))
            .to_owned()
    };
    let mut layer = BTreeMap::new();
    for (at, group) in line("layers:").split(',').enumerate() {
        for module in group.split_whitespace() {
            layer.insert(module.to_owned(), at);
        }
    }
    let crossings = line("crossings:")
        .split_whitespace()
        .filter_map(|pair| pair.split_once('>'))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
    Order { layer, crossings }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// The module path of a file under `src/`: `src/ws/history/mod.rs` is `[ws, history]`.
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "mod.rs" | "lib.rs" => {}
        name => parts.push(name.trim_end_matches(".rs").to_owned()),
    }
    parts
}

/// The code of a file: its `#[cfg(test)]` module (the tail of the file, by this project's
/// habit) and comment lines dropped.
fn code_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push(line);
    }
    out
}

/// The names a path names at `line[after..]`: one identifier, or those at the first depth of
/// a `{…}` group.
fn first_names(line: &str, after: usize) -> Vec<String> {
    let ident = |from: usize| -> String {
        line[from..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if !line[after..].starts_with('{') {
        return vec![ident(after)];
    }
    let mut found = Vec::new();
    let mut depth = 0;
    let mut expect = true;
    for (k, c) in line[after..].char_indices() {
        match c {
            '{' => {
                depth += 1;
                expect = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => expect = true,
            c if expect && depth == 1 && (c.is_alphanumeric() || c == '_') => {
                found.push(ident(after + k));
                expect = false;
            }
            _ => {}
        }
    }
    found
}

/// Where a path begins in a line of code: after `crate::`, or after `super::` said `ups`
/// times; `at` is where its first name starts.
enum PathFrom {
    Crate { at: usize },
    Super { ups: usize, at: usize },
}

/// The paths a line of code names, each where it begins (a `crate::` or `super::` at a word's
/// start).
fn paths(line: &str) -> Vec<PathFrom> {
    let mut found = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        let rest = &line[i..];
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if boundary && rest.starts_with("crate::") {
            i += "crate::".len();
            found.push(PathFrom::Crate { at: i });
            continue;
        }
        if boundary && rest.starts_with("super::") {
            let mut ups = 0;
            while line[i..].starts_with("super::") {
                ups += 1;
                i += "super::".len();
            }
            found.push(PathFrom::Super { ups, at: i });
            continue;
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// The top-level modules a line of code names: `crate::X`, `crate::{X::…, Y}` and `super::`
/// paths that climb out of the file's top-level module (at module path `at`).
fn named_modules(line: &str, at: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for path in paths(line) {
        match path {
            PathFrom::Crate { at } => found.extend(first_names(line, at)),
            // `super` from a module at depth d reaches depth d - ups; at depth 0 the next
            // name is a top-level module.
            PathFrom::Super { ups, at: name } if ups >= at.len() => {
                found.extend(first_names(line, name));
            }
            PathFrom::Super { .. } => {}
        }
    }
    found
}

#[test]
fn no_module_uses_one_above_it_or_beside_it_beyond_the_crossings_design_md_names() {
    let order = order();
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    let mut wrong = Vec::new();
    let mut used_crossings = BTreeSet::new();
    for file in &files {
        let at = module_path(file);
        let Some(from) = at.first() else {
            continue; // lib.rs: the crate's root declares every module
        };
        let from_layer = *order.layer.get(from).unwrap_or_else(|| {
            panic!("src/{from} is in no layer of docs/DESIGN.md's `layers:` line")
        });
        let text = std::fs::read_to_string(file).unwrap();
        for line in code_lines(&text) {
            // A public re-export puts a name where the specification has it: the facade, not
            // a dependency of this module's code.
            if line.trim_start().starts_with("pub use ") {
                continue;
            }
            for to in named_modules(line, &at) {
                if &to == from || !order.layer.contains_key(&to) {
                    continue; // itself, or not a module of ours (`crate::` items of lib.rs)
                }
                let to_layer = order.layer[&to];
                if to_layer < from_layer {
                    continue;
                }
                let pair = (from.clone(), to.clone());
                if order.crossings.contains(&pair) {
                    used_crossings.insert(pair);
                    continue;
                }
                wrong.push(format!(
                    "{}: `{}` uses {to}, {}",
                    file.strip_prefix(root()).unwrap().display(),
                    line.trim(),
                    if to_layer == from_layer {
                        "a module of its own layer"
                    } else {
                        "a layer above it"
                    }
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "against docs/DESIGN.md's layers:\n{}",
        wrong.join("\n")
    );
    let stale: Vec<_> = order.crossings.difference(&used_crossings).collect();
    assert!(
        stale.is_empty(),
        "crossings docs/DESIGN.md still names that the code no longer makes (remove them): {stale:?}"
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let order = order();
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    for line in code_lines(&lib) {
        let t = line.trim_start();
        let declared = t
            .strip_prefix("pub mod ")
            .or_else(|| t.strip_prefix("pub(crate) mod "))
            .or_else(|| t.strip_prefix("mod "));
        if let Some(name) = declared {
            let name = name.trim_end_matches(';').trim();
            assert!(
                order.layer.contains_key(name),
                "src/lib.rs declares `{name}`, which docs/DESIGN.md's `layers:` line does not place"
            );
        }
    }
}

#[test]
fn the_reader_finds_every_kind_of_path() {
    let at = vec!["ws".to_owned(), "app".to_owned()];
    assert_eq!(named_modules("use crate::http::Request;", &at), ["http"]);
    assert_eq!(
        named_modules("use crate::{http::{A, B}, sse::Event, fleet};", &at),
        ["http", "sse", "fleet"]
    );
    assert_eq!(
        named_modules("Http(crate::server::HttpMsg),", &at),
        ["server"]
    );
    assert!(named_modules("use super::frame::Role;", &at).is_empty());
    assert_eq!(named_modules("use super::super::tls::X;", &at), ["tls"]);
    let top = vec!["ws".to_owned()];
    assert_eq!(named_modules("use super::sse::Event;", &top), ["sse"]);
    assert!(named_modules("let notcrate::x = 1;", &at).is_empty());
    assert_eq!(
        code_lines("use a;\n// crate::x\n#[cfg(test)]\nmod tests {\n use crate::y;\n}\n"),
        ["use a;"]
    );
}

/// The files of `src/server/` (a folder counts as one) that a line of the file at module path
/// `at` (under `server`) names: `crate::server::X`, and `super::` paths that climb to `server`.
fn server_files_named(line: &str, at: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for path in paths(line) {
        match path {
            PathFrom::Crate { at } if line[at..].starts_with("server::") => {
                found.extend(first_names(line, at + "server::".len()));
            }
            // From `server/a.rs` (at `[server, a]`) one `super` is `server`; from
            // `server/a/b.rs` two.
            PathFrom::Super { ups, at: name } if ups + 1 == at.len() => {
                found.extend(first_names(line, name));
            }
            _ => {}
        }
    }
    found
}

#[test]
fn no_files_of_the_server_use_each_other_in_a_circle() {
    let mut files = Vec::new();
    rust_files(&root().join("src/server"), &mut files);
    files.sort();
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let at = module_path(file);
        let Some(from) = at.get(1) else {
            continue; // server/mod.rs: the layer's root declares every file
        };
        let text = std::fs::read_to_string(file).unwrap();
        for line in code_lines(&text) {
            if line.trim_start().starts_with("pub use ") {
                continue;
            }
            for to in server_files_named(line, &at) {
                let file_of_server = !to.is_empty()
                    && (root().join("src/server").join(format!("{to}.rs")).exists()
                        || root().join("src/server").join(&to).is_dir());
                if &to != from && file_of_server {
                    uses.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    // A circle is a file that reaches itself.
    let mut circles = Vec::new();
    for start in uses.keys() {
        let mut seen = BTreeSet::new();
        let mut next: Vec<&String> = uses[start].iter().collect();
        while let Some(file) = next.pop() {
            if file == start {
                circles.push(start.clone());
                break;
            }
            if seen.insert(file.clone()) {
                next.extend(uses.get(file).into_iter().flatten());
            }
        }
    }
    assert!(
        circles.is_empty(),
        "files of src/server/ that reach themselves through what they use: {circles:?}\n{uses:#?}"
    );
}
