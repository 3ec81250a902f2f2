//! Compiles the small C helper that gives kvik the platform's `long double`
//! arithmetic (see csrc/longdouble.c).

fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new()
        .file("csrc/longdouble.c")
        .flag_if_supported("-std=c11")
        .warnings(true)
        .extra_warnings(true)
        .compile("kvik_longdouble");
}
