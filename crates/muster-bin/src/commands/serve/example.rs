//! The example configuration built into the binary (`muster serve --example`): the files of
//! `examples/config`, written into a fresh temporary directory, so serving them never writes
//! status into a checkout.

use anyhow::Context;

/// Every file of the example, relative to the config directory.
const FILES: &[(&str, &str)] = &[
    (
        "config.yaml",
        include_str!("../../../example-config/config.yaml"),
    ),
    (
        "mcpservers/docs-search.yaml",
        include_str!("../../../example-config/mcpservers/docs-search.yaml"),
    ),
    (
        "mcpservers/everything.yaml",
        include_str!("../../../example-config/mcpservers/everything.yaml"),
    ),
    (
        "mcpservers/legacy-reports.yaml",
        include_str!("../../../example-config/mcpservers/legacy-reports.yaml"),
    ),
    (
        "mcpservers/time.yaml",
        include_str!("../../../example-config/mcpservers/time.yaml"),
    ),
    (
        "workflows/collect-inventory.yaml",
        include_str!("../../../example-config/workflows/collect-inventory.yaml"),
    ),
    (
        "workflows/greet-all.yaml",
        include_str!("../../../example-config/workflows/greet-all.yaml"),
    ),
    (
        "workflows/inventory-page.yaml",
        include_str!("../../../example-config/workflows/inventory-page.yaml"),
    ),
    (
        "workflows/sum-and-check.yaml",
        include_str!("../../../example-config/workflows/sum-and-check.yaml"),
    ),
    (
        "workflows/weather-report.yaml",
        include_str!("../../../example-config/workflows/weather-report.yaml"),
    ),
];

/// Writes the example into a new temporary directory, removed when the value is dropped.
pub(super) fn materialize() -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("muster-example-")
        .tempdir()
        .context("cannot create a directory for the example configuration")?;
    for (relative, contents) in FILES {
        let path = dir.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, contents)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn yaml_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                yaml_files(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                let relative = path.strip_prefix(root).unwrap();
                out.push(relative.to_string_lossy().into_owned());
            }
        }
    }

    #[test]
    fn every_example_file_is_built_in() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("example-config");
        let mut on_disk = Vec::new();
        yaml_files(&root, &root, &mut on_disk);
        on_disk.sort();
        let built_in: Vec<&str> = FILES.iter().map(|(name, _)| *name).collect();
        assert_eq!(on_disk, built_in, "add new example files to FILES");
    }

    #[test]
    fn the_example_is_written_out_whole() {
        let dir = materialize().unwrap();
        for (relative, contents) in FILES {
            let written = std::fs::read_to_string(dir.path().join(relative)).unwrap();
            assert_eq!(&written, contents, "{relative}");
        }
    }
}
