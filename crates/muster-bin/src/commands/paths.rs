//! Path arguments as users type them.

use std::path::{Path, PathBuf};

/// Replaces a leading `~` with the home directory, since a shell does not expand it in
/// `--config-path=~/...` or in a default value.
pub(crate) fn expand_home(path: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    expand_home_with(path, home.as_deref())
}

fn expand_home_with(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_a_leading_tilde_only() {
        let home = Some(Path::new("/home/me"));
        assert_eq!(
            expand_home_with(Path::new("~/.config/muster"), home),
            Path::new("/home/me/.config/muster")
        );
        assert_eq!(
            expand_home_with(Path::new("~"), home),
            Path::new("/home/me")
        );
        assert_eq!(
            expand_home_with(Path::new("/etc/~x"), home),
            Path::new("/etc/~x")
        );
        assert_eq!(
            expand_home_with(Path::new("~other/x"), home),
            Path::new("~other/x")
        );
        assert_eq!(expand_home_with(Path::new("~/x"), None), Path::new("~/x"));
    }
}
