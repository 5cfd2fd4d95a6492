//! The path navigator shared by conditions, pagination and typed templates:
//! dot-separated segments, each a name optionally followed by `[n]` indices
//! (`items[0].metadata.name`, `matrix[0][1]`).

use serde_json::Value;

/// Why a path could not be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// A key is missing.
    #[error("path '{0}' not found")]
    NotFound(String),
    /// A name was applied to something that is not an object.
    #[error("cannot access '{name}' in path '{path}': not an object")]
    NotAnObject {
        /// The segment.
        name: String,
        /// The whole path.
        path: String,
    },
    /// An index was applied to something that is not an array.
    #[error("cannot index '{segment}' in path '{path}': not an array")]
    NotAnArray {
        /// The segment.
        segment: String,
        /// The whole path.
        path: String,
    },
    /// An index is past the end.
    #[error("index {index} out of range in path '{path}'")]
    OutOfRange {
        /// The index.
        index: usize,
        /// The whole path.
        path: String,
    },
    /// The path is not well formed.
    #[error("invalid path '{0}'")]
    Invalid(String),
}

/// Follows `path` from `root`.
pub fn navigate<'a>(root: &'a Value, path: &str) -> Result<&'a Value, PathError> {
    let mut cur = root;
    let trimmed = path.trim().trim_start_matches('.');
    if trimmed.is_empty() {
        return Ok(root);
    }
    for segment in trimmed.split('.') {
        let (name, indices) =
            split_segment(segment).ok_or_else(|| PathError::Invalid(path.to_owned()))?;
        if !name.is_empty() {
            cur = match cur {
                Value::Object(map) => map
                    .get(name)
                    .ok_or_else(|| PathError::NotFound(path.to_owned()))?,
                _ => {
                    return Err(PathError::NotAnObject {
                        name: name.to_owned(),
                        path: path.to_owned(),
                    });
                }
            };
        }
        for index in indices {
            cur = match cur {
                Value::Array(items) => items.get(index).ok_or_else(|| PathError::OutOfRange {
                    index,
                    path: path.to_owned(),
                })?,
                _ => {
                    return Err(PathError::NotAnArray {
                        segment: segment.to_owned(),
                        path: path.to_owned(),
                    });
                }
            };
        }
    }
    Ok(cur)
}

/// Splits `name[1][2]` into `("name", [1, 2])`.
fn split_segment(segment: &str) -> Option<(&str, Vec<usize>)> {
    let (name, mut rest) = match segment.find('[') {
        Some(i) => (&segment[..i], &segment[i..]),
        None => (segment, ""),
    };
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    let mut indices = Vec::new();
    while !rest.is_empty() {
        let close = rest.find(']')?;
        indices.push(rest.get(1..close)?.parse().ok()?);
        rest = &rest[close + 1..];
        if !rest.is_empty() && !rest.starts_with('[') {
            return None;
        }
    }
    Some((name, indices))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn navigation_and_errors() {
        let v = json!({"items": [{"name": "a"}, {"name": "b"}], "m": [[1, 2], [3]], "s": "x"});
        assert_eq!(navigate(&v, "items[1].name").unwrap(), "b");
        assert_eq!(navigate(&v, ".m[0][1]").unwrap(), 2);
        assert_eq!(
            navigate(&v, "missing"),
            Err(PathError::NotFound("missing".into()))
        );
        assert!(matches!(
            navigate(&v, "s.x"),
            Err(PathError::NotAnObject { .. })
        ));
        assert!(matches!(
            navigate(&v, "s[0]"),
            Err(PathError::NotAnArray { .. })
        ));
        assert!(matches!(
            navigate(&v, "items[5]"),
            Err(PathError::OutOfRange { index: 5, .. })
        ));
        assert!(matches!(
            navigate(&v, "items[x]"),
            Err(PathError::Invalid(_))
        ));
    }
}
