//! The documentation stays true: every command in the command table is listed in
//! docs/compatibility.md.

#[test]
fn every_command_is_in_the_compatibility_table() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/compatibility.md"
    ))
    .expect("docs/compatibility.md exists");
    let registry = kvik_server::commands::registry();
    let missing: Vec<String> = registry
        .iter()
        .map(|(_, c)| c.name.rsplit('|').next().unwrap_or(c.name).to_uppercase())
        .filter(|name| !doc.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "not in docs/compatibility.md: {missing:?}"
    );
}
