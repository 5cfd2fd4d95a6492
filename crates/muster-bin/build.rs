//! Link settings of the `muster` binary that keep what it maps small.
//!
//! **Code layout.** The functions muster runs sit together.
//! `layout/symbol-order.txt` lists the functions a profile of `muster serve` executed
//! (start-up, proxied calls, meta-tools, a workflow), the busiest first. Passed to the linker
//! as its symbol ordering file, it puts them at the start of the code segment, so the pages
//! a running muster maps hold mostly code it runs: a smaller resident set and fewer
//! instruction-cache and TLB misses (docs/decisions/0009-functions-laid-out-by-profile.md;
//! `layout/generate.sh` writes the file again).
//!
//! **Packed relocations.** The position-independent executable's relative relocations (one
//! per pointer in its tables, about 65 000) are stored packed (`DT_RELR`, 18 KB instead of
//! 1.5 MB that the loader reads at every start) where the C library applies them: glibc 2.36
//! and later, which mark the support with the `GLIBC_ABI_DT_RELR` symbol version that the
//! linker then requires, so an older glibc refuses the binary by name.
//!
//! Both only where the linker is known to be LLD, which understands the options: Rust's
//! default linker on `x86_64-unknown-linux-gnu` since Rust 1.90, when neither a linker nor
//! linker flags are configured. `MUSTER_SYMBOL_ORDER=0` turns the layout off,
//! `MUSTER_PACK_RELOCS=0` the packed relocations.

use std::path::Path;
use std::process::Command;

/// Where the target's C library may be, as the linker finds it on glibc distributions.
const LIBC_PATHS: [&str; 3] = [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/lib64/libc.so.6",
];

/// The first Rust release that links `x86_64-unknown-linux-gnu` with its own LLD by default.
const FIRST_RELEASE_LINKING_WITH_LLD: (u32, u32) = (1, 90);

fn main() {
    println!("cargo:rerun-if-changed=layout/symbol-order.txt");
    let lld = links_with_default_lld();
    let packed = lld && env("MUSTER_PACK_RELOCS") != "0" && libc_applies_packed_relocations();
    // What this script decided, for the test that checks the binary (tests/link.rs).
    println!("cargo:rustc-env=MUSTER_PACKED_RELOCS={}", u8::from(packed));
    if packed {
        link_arg("-z,pack-relative-relocs");
    }
    let order = Path::new(&env("CARGO_MANIFEST_DIR")).join("layout/symbol-order.txt");
    if lld && env("MUSTER_SYMBOL_ORDER") != "0" && order.is_file() {
        link_arg(&format!("--symbol-ordering-file={}", order.display()));
        // Functions of the profile this build no longer has (renamed, inlined) are skipped.
        link_arg("--no-warn-symbol-ordering");
    }
}

/// Passes `arg` to the linker of the `muster` binary.
fn link_arg(arg: &str) {
    println!("cargo:rustc-link-arg-bin=muster=-Wl,{arg}");
}

/// Whether the C library the binary links with applies `DT_RELR` relocations: it defines
/// the `GLIBC_ABI_DT_RELR` version (glibc 2.36 and later).
fn libc_applies_packed_relocations() -> bool {
    LIBC_PATHS
        .iter()
        .find_map(|path| std::fs::read(path).ok())
        .is_some_and(|libc| {
            libc.windows(b"GLIBC_ABI_DT_RELR".len())
                .any(|window| window == b"GLIBC_ABI_DT_RELR")
        })
}

/// Whether this build links with the LLD that Rust uses by default on the target.
fn links_with_default_lld() -> bool {
    if env("TARGET") != "x86_64-unknown-linux-gnu" {
        return false;
    }
    // A configured linker, or linker flags (`-C linker=…`, `-C linker-features=…`,
    // `-C link-self-contained=…`), may not be LLD.
    if !env("RUSTC_LINKER").is_empty() || env("CARGO_ENCODED_RUSTFLAGS").contains("link") {
        return false;
    }
    rustc_release().is_some_and(|release| release >= FIRST_RELEASE_LINKING_WITH_LLD)
}

/// The compiler's `(major, minor)` release, from `rustc -vV`.
fn rustc_release() -> Option<(u32, u32)> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc).arg("-vV").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let release = text
        .lines()
        .find_map(|line| line.strip_prefix("release: "))?;
    let mut parts = release.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn env(name: &str) -> String {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).unwrap_or_default()
}
