//! The reference table of `docs/configuration.md`, generated from [`PARAMS`]
//! so that the document cannot drift from the code (a unit test compares them).

use crate::table::{
    Kind, DYNAMIC_DEFAULT, HIDDEN, IMMUTABLE, KEYDB, LIVE, NO_EFFECT, ONLY_DEFAULT, PARAMS,
    PROTECTED, SENSITIVE,
};

/// Marks the start of the generated part of `docs/configuration.md`.
pub const BEGIN: &str =
    "<!-- BEGIN GENERATED PARAMETER TABLE (kvik-config: reference_markdown) -->";
/// Marks the end of the generated part.
pub const END: &str = "<!-- END GENERATED PARAMETER TABLE -->";

fn kind_text(k: &Kind) -> String {
    match k {
        Kind::Bool => "yes/no".into(),
        Kind::Int { min, max } => format!("integer {min}..{max}"),
        Kind::Octal { min, max } => format!("octal {min:o}..{max:o}"),
        Kind::Memory { min, max } => format!("memory {min}..{max}"),
        Kind::Enum(opts) => format!("one of {}", opts.join(", ")),
        Kind::String => "string".into(),
        Kind::Special(d) => (*d).to_string(),
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The Markdown table of every parameter, between the BEGIN and END markers.
pub fn reference_markdown() -> String {
    let mut out = String::new();
    out.push_str(BEGIN);
    out.push_str("\n\n| Directive | Alias | Type | Default | Runtime | Status | Meaning |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for p in PARAMS {
        let alias = p.alias.map(|a| format!("`{a}`")).unwrap_or_default();
        let default = if p.has(DYNAMIC_DEFAULT) {
            format!("({})", p.default)
        } else if p.default.is_empty() {
            "\"\"".to_string()
        } else {
            format!("`{}`", p.default)
        };
        let runtime = if p.has(IMMUTABLE) {
            "no"
        } else if p.has(PROTECTED) {
            "protected"
        } else {
            "yes"
        };
        let mut status = if p.has(LIVE) {
            "in effect".to_string()
        } else if p.has(ONLY_DEFAULT) {
            "default only; other values refused".to_string()
        } else if p.has(NO_EFFECT) {
            "no effect (start-up warning)".to_string()
        } else {
            "accepted, no effect yet".to_string()
        };
        if p.has(KEYDB) {
            status.push_str("; KeyDB");
        }
        if p.has(HIDDEN) {
            status.push_str("; hidden");
        }
        if p.has(SENSITIVE) {
            status.push_str("; sensitive");
        }
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            p.name,
            alias,
            cell(&kind_text(&p.kind)),
            cell(&default),
            runtime,
            status,
            cell(p.doc)
        ));
    }
    out.push('\n');
    out.push_str(END);
    out
}
