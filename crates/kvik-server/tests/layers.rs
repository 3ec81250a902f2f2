//! The layer rule, checked: a module of kvik-server imports only modules of the
//! layers below its own (docs/architecture.md draws the picture). The bottom layers
//! are crates of their own (kvik-util, kvik-types, kvik-rdb, kvik-config,
//! kvik-resp), where the compiler holds the rule; inside kvik-server this test does.
//!
//! It reads every source file, drops comments (a doc link upward names, it does not
//! depend), and collects each `crate::<module>` path, including those inside
//! `use crate::{...}` groups. A lower module that needs to reach up needs a seam (a
//! trait, a function handed down at start-up, a mailbox message), not an import.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top to bottom. A module may import the modules of any layer below its own, and
/// none of its own layer or above.
const LAYERS: &[&[&str]] = &[
    // Start-up: builds the table and the server, starts the threads.
    &["startup"],
    // Event loops and connections; the metrics endpoint, which reads INFO.
    &["net", "metrics"],
    // The command table, the one `call()` door and the command families.
    &["commands"],
    // The shared state of the server: every engine's state, the clients, the
    // mailboxes, and what the whole server does (saving).
    &["server"],
    // Replication: the role, the backlog, the feeds of replicas, the link to a
    // master (the command door reached through its `Host` seam).
    &["replication"],
    // Engines that work for clients: client-side caching delivers to connections.
    &["tracking"],
    // A connection's own state.
    &["client"],
    // The append-only file: written from the snapshot and the effect stream.
    &["aof"],
    // Engines over the keyspace.
    &["snapshot"],
    &["scripting", "blocking", "memory", "defrag"],
    &["slowlog", "latency"],
    // Databases, shards, entries, expiry, eviction, the locks commands take.
    &["keyspace"],
    // What a write emits: keyspace events, pub/sub delivery, effects, frees.
    &["notify"],
    &["pubsub", "effects", "lazyfree"],
    // The crash report reads the version and writes the log; the loading state
    // reads the clock.
    &["crash", "loading"],
    // Users and permissions: the command facts come down from the table at start-up.
    &["acl"],
    // Leaves.
    &[
        "stats",
        "mailbox",
        "hlc",
        "errors",
        "version",
        "logging",
        "listen",
        "tls",
        "oom_score",
        "supervise",
        "process",
    ],
    // Re-exported crates (the compiler keeps them below everything).
    &["persistence", "types", "util"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The top-level module a source file belongs to (`commands/keys/dump.rs` ->
/// `commands`); `None` for the crate root and the binary.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let module = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(module, "lib" | "main")).then(|| module.to_string())
}

fn source_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The code of a file without its comments (line, doc and block comments); string
/// literals are kept, which is harmless: none spells `crate::`.
fn without_comments(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').map_or("", |at| &after[at..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |at| &after[at + 2..]);
        } else {
            let next = rest.chars().next().expect("not empty");
            code.push(next);
            rest = &rest[next.len_utf8()..];
        }
    }
    code
}

/// The top-level modules `code` names as `crate::<module>`, directly or inside a
/// `use crate::{a, b::c}` group.
fn imported_modules(code: &str) -> Vec<String> {
    let mut modules = Vec::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let after = &code[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let end = matching_brace(group);
            for item in split_top_level(&group[..end]) {
                let name = ident(item.trim());
                if !name.is_empty() {
                    modules.push(name);
                }
            }
        } else {
            let name = ident(after);
            if !name.is_empty() {
                modules.push(name);
            }
        }
    }
    modules
}

/// Where the group that `text` opens ends (the index of its closing brace).
fn matching_brace(text: &str) -> usize {
    let mut depth = 0;
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return at,
            '}' => depth -= 1,
            _ => {}
        }
    }
    text.len()
}

/// The items of a `use` group, split at the commas outside nested groups.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

#[test]
fn modules_import_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let mut upward: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let Some(own) = layer_of(&module) else {
            unplaced.push(module);
            continue;
        };
        let text = std::fs::read_to_string(file).expect("source readable");
        for target in imported_modules(&without_comments(&text)) {
            if target == module || target.starts_with("log_") {
                // The logging macros are exported at the crate root.
                continue;
            }
            let Some(theirs) = layer_of(&target) else {
                unplaced.push(target);
                continue;
            };
            if theirs <= own {
                let shown = file
                    .strip_prefix(&src)
                    .unwrap_or(file)
                    .display()
                    .to_string();
                upward
                    .entry(format!("{module} -> {target}"))
                    .or_default()
                    .push(shown);
            }
        }
    }
    unplaced.sort();
    unplaced.dedup();
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS: {unplaced:?}"
    );
    let report: Vec<String> = upward
        .iter()
        .map(|(edge, files)| format!("{edge} ({})", files.join(", ")))
        .collect();
    assert!(
        report.is_empty(),
        "imports that do not go down a layer:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_scanner_sees_groups_and_ignores_comments() {
    let code = without_comments(
        "use crate::{a::B, c::{d, e}, f};\n// crate::hidden\n/* crate::also */ x = crate::g::h();",
    );
    assert_eq!(imported_modules(&code), ["a", "c", "f", "g"]);
}
