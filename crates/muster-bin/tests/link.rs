//! The link settings of `build.rs` reach the `muster` binary the tests run.

use std::process::Command;

/// `readelf` with `args` on the `muster` binary; `None` when binutils are not installed.
fn readelf(args: &[&str]) -> Option<String> {
    let output = Command::new("readelf")
        .args(args)
        .arg(env!("CARGO_BIN_EXE_muster"))
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn packed_relocations_come_with_the_glibc_version_that_applies_them() {
    let (Some(dynamic), Some(versions)) = (readelf(&["-d"]), readelf(&["-V"])) else {
        eprintln!("readelf not installed: nothing to inspect");
        return;
    };
    let packed = dynamic.contains("(RELR)");
    // An older glibc must refuse the binary by name rather than run it unrelocated.
    assert_eq!(
        packed,
        versions.contains("GLIBC_ABI_DT_RELR"),
        "RELR entry and GLIBC_ABI_DT_RELR requirement go together:\n{dynamic}"
    );
    let libc_applies_them = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6")
        .is_ok_and(|libc| libc.windows(17).any(|w| w == b"GLIBC_ABI_DT_RELR"));
    let default_lld = cfg!(all(
        target_arch = "x86_64",
        target_os = "linux",
        target_env = "gnu"
    )) && std::env::var_os("RUSTC_LINKER").is_none()
        && std::env::var("MUSTER_PACK_RELOCS").as_deref() != Ok("0");
    if default_lld && libc_applies_them {
        assert!(
            packed,
            "this glibc applies DT_RELR, so the binary packs its relocations"
        );
    }
}
