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
    // The build script's decision: where it packed them, the binary must have them.
    assert_eq!(
        packed,
        env!("MUSTER_PACKED_RELOCS") == "1",
        "build.rs decided MUSTER_PACKED_RELOCS={}:\n{dynamic}",
        env!("MUSTER_PACKED_RELOCS")
    );
}
