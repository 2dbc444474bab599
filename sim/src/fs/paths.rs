//! Path handling: normalising what the engine passes (absolute, no `.`/`..`), splitting
//! a path into its directory and name, and naming an inode by the path it was opened as.

use super::*;

/// An absolute path without `.` or `..`; relative paths are taken from `/`.
pub(super) fn normalize(path: &Path) -> io::Result<PathBuf> {
    if is_normal(path) {
        return Ok(path.to_owned()); // The engine's paths: nothing to rewrite.
    }
    normalize_components(path)
}

/// [`normalize`] the long way, component by component.
pub(super) fn normalize_components(path: &Path) -> io::Result<PathBuf> {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Prefix(_) => return Err(os_error(errno::EINVAL)),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                if name.to_str().is_none() {
                    return Err(os_error(errno::EINVAL));
                }
                out.push(name);
            }
        }
    }
    Ok(out)
}

/// Whether `path` already is what [`normalize`] makes of it: UTF-8, `/` alone or `/`
/// followed by non-empty components separated by single `/`s, none `.` or `..`.
pub(super) fn is_normal(path: &Path) -> bool {
    // Bytes, not `str::split`: the engine's paths come through here on every open and
    // every look at a file's image, and the char searcher was 1% of a `default` seed.
    let bytes = path.as_os_str().as_encoded_bytes();
    if !bytes.is_ascii() && path.to_str().is_none() {
        return false;
    }
    let Some(rest) = bytes.strip_prefix(b"/") else {
        return false;
    };
    rest.is_empty()
        || rest
            .split(|&b| b == b'/')
            .all(|name| !name.is_empty() && name != b"." && name != b"..")
}

/// (parent directory, name) of a file path; `/` itself is a directory, not a file.
pub(super) fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    if is_normal(path)
        && let Some(text) = path.to_str()
        && let Some(slash) = text.rfind('/')
        && slash + 1 < text.len()
    {
        // The fast path of the common case; the same result as below.
        let parent = if slash == 0 { "/" } else { &text[..slash] };
        return Ok((PathBuf::from(parent), text[slash + 1..].to_owned()));
    }
    let path = normalize(path)?;
    match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(parent), Some(name)) => Ok((parent.to_owned(), name.to_owned())),
        _ => Err(os_error(errno::EISDIR)),
    }
}

/// The current name of `ino` for the event log: the path the handle was opened as
/// when it still names the inode (one lookup, the common case), otherwise a scan.
pub(super) fn path_of(ns: &Namespace, ino: InodeId, opened_as: &Path) -> PathBuf {
    let still_named = split(opened_as)
        .ok()
        .is_some_and(|(dir, name)| ns.visible(&dir, &name) == Some(ino));
    if still_named {
        return opened_as.to_owned();
    }
    ns.inode_paths()
        .remove(&ino)
        .unwrap_or_else(|| opened_as.to_owned())
}
