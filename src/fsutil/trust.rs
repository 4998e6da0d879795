//! Who may write in a directory besides the caller, from its mode bits and
//! its POSIX access ACL, and what that allows: which directories retry
//! writes in, which symbolic links it follows there and whose files it
//! writes into.
//!
//! An ACL changes what the mode bits mean: with one, the group bits show
//! the ACL's mask (the most any named user or group, or the owning group,
//! may do), not the owning group's own rights. A directory `root:root 0755`
//! with `u:mallory:rwx` added shows as 0775; taking those group bits for
//! root's group would trust a directory mallory can write. So the ACL is
//! read from the kernel (`system.posix_acl_access`) and each entry that
//! grants write, through the mask, to someone other than the caller (or the
//! directory's owner) counts as others' write.

use std::os::fd::AsFd;

use nix::sys::stat::FileStat;
use nix::unistd::{Gid, Group, Uid, User};

use super::Rule;

/// The ACL entry tags of the kernel's extended-attribute format
/// (`include/uapi/linux/posix_acl.h`).
const ACL_USER_OBJ: u16 = 0x01;
const ACL_USER: u16 = 0x02;
const ACL_GROUP_OBJ: u16 = 0x04;
const ACL_GROUP: u16 = 0x08;
const ACL_MASK: u16 = 0x10;
const ACL_OTHER: u16 = 0x20;
/// The write bit of an entry's permissions.
const ACL_WRITE: u16 = 0x02;
/// The only version of the format.
const ACL_VERSION: u32 = 2;

/// One entry of an access ACL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AclEntry {
    pub tag: u16,
    pub perm: u16,
    pub id: u32,
}

/// The entries of the kernel's `system.posix_acl_access` value: a 4-byte
/// version, then 8 bytes per entry (tag, permissions, id; little-endian).
/// `None` when the value is not in that form.
pub fn parse_acl(bytes: &[u8]) -> Option<Vec<AclEntry>> {
    let (version, rest) = bytes.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*version) != ACL_VERSION || !rest.len().is_multiple_of(8) {
        return None;
    }
    let entries = rest
        .chunks_exact(8)
        .map(|e| AclEntry {
            tag: u16::from_le_bytes([e[0], e[1]]),
            perm: u16::from_le_bytes([e[2], e[3]]),
            id: u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
        })
        .collect::<Vec<_>>();
    let known = [
        ACL_USER_OBJ,
        ACL_USER,
        ACL_GROUP_OBJ,
        ACL_GROUP,
        ACL_MASK,
        ACL_OTHER,
    ];
    entries
        .iter()
        .all(|e| known.contains(&e.tag))
        .then_some(entries)
}

/// The access ACL of the open file `fd`: `Ok(None)` when it has none (or
/// its file system keeps none).
pub fn read_acl(fd: impl AsFd) -> Result<Option<Vec<AclEntry>>, String> {
    // Room for 30 entries on the stack; a longer ACL is read again whole.
    let mut small = [0u8; 4 + 30 * 8];
    let mut large = Vec::new();
    match crate::sys::access_acl(fd.as_fd(), &mut small, &mut large) {
        Ok(Some(bytes)) => parse_acl(bytes)
            .map(Some)
            .ok_or_else(|| "has an access ACL retry cannot read".to_string()),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("has an access ACL that cannot be read: {e}")),
    }
}

/// Whether a group-writable directory's group is the caller's own private
/// group (a group of the caller's name with nobody else in it, as Debian
/// creates for each user): then "writable by the group" means "by the
/// caller". Debian's OpenSSH accepts such groups for the same reason.
pub fn group_is_callers_own(gid: u32) -> bool {
    let euid = Uid::effective();
    let Ok(Some(user)) = User::from_uid(euid) else {
        return false;
    };
    let Ok(Some(group)) = Group::from_gid(Gid::from_raw(gid)) else {
        return false;
    };
    group.name == user.name && group.mem.iter().all(|m| *m == user.name)
}

/// Who, besides the caller `me` and the file's owner, may write to the
/// file whose status is `stat` and whose access ACL is `acl`, in words
/// ("every user", "its group (gid 100)", "user 1001 through an ACL"); None
/// when nobody. `own_group` says whether a group is the caller's own (see
/// [`group_is_callers_own`]). Pure: the caller reads the status and ACL.
pub fn other_writers(
    stat: &FileStat,
    acl: Option<&[AclEntry]>,
    me: u32,
    own_group: impl Fn(u32) -> bool,
) -> Option<String> {
    let mode = stat.st_mode;
    if mode & 0o002 != 0 {
        return Some("every user".into());
    }
    let acl = acl.unwrap_or_default();
    let Some(mask) = acl.iter().find(|e| e.tag == ACL_MASK) else {
        // No mask: the ACL (if any) is the mode bits, and the group bits
        // are the owning group's.
        if mode & 0o020 != 0 && !own_group(stat.st_gid) {
            return Some(format!("its group (gid {})", stat.st_gid));
        }
        return None;
    };
    let writes = |e: &AclEntry| e.perm & mask.perm & ACL_WRITE != 0;
    for e in acl.iter().filter(|e| writes(e)) {
        match e.tag {
            ACL_GROUP_OBJ if !own_group(stat.st_gid) => {
                return Some(format!("its group (gid {})", stat.st_gid));
            }
            ACL_USER if e.id != me && e.id != stat.st_uid => {
                return Some(format!("user {} through an ACL", e.id));
            }
            ACL_GROUP if !own_group(e.id) => {
                return Some(format!("group {} through an ACL", e.id));
            }
            _ => {}
        }
    }
    None
}

/// Judges a directory by its status and access ACL against `rule`.
/// `Ok(true)`: others may write in it, which [`Rule::Output`] allows for a
/// sticky directory (as `/tmp`), where they cannot remove or rename what
/// retry creates; `Ok(false)`: nobody but its owner (and the caller) may.
pub fn judge_dir(stat: &FileStat, acl: Option<&[AclEntry]>, rule: Rule) -> Result<bool, String> {
    let euid = Uid::effective().as_raw();
    let owner_ok = match rule {
        Rule::Private => stat.st_uid == euid,
        Rule::Output => stat.st_uid == euid || stat.st_uid == 0,
    };
    if !owner_ok {
        return Err(format!(
            "belongs to another user (uid {}), who could replace what retry writes there",
            stat.st_uid
        ));
    }
    let Some(who) = other_writers(stat, acl, euid, group_is_callers_own) else {
        return Ok(false);
    };
    let sticky = stat.st_mode & 0o1000 != 0;
    if rule == Rule::Output && sticky {
        return Ok(true);
    }
    Err(format!(
        "is writable by {who} (mode {:04o})",
        stat.st_mode & 0o7777
    ))
}

/// Whether a symbolic link found in a directory may be followed: the rule
/// of Linux's `fs.protected_symlinks`, applied whatever that setting is. In
/// a directory others can write to (`shared`), only a link owned by the
/// caller or by the directory's owner is followed; elsewhere only someone
/// trusted with the directory could have made it.
pub fn link_is_safe(shared: bool, dir: &FileStat, link: &FileStat) -> bool {
    !shared || link.st_uid == Uid::effective().as_raw() || link.st_uid == dir.st_uid
}

/// Whether retry may write into (or over) the file `file` that stands in
/// a directory others can write to (`shared`): only one of the caller's or
/// of the directory's owner. Another user's file there is theirs to change
/// after retry wrote it, and their FIFO hands what retry writes to them;
/// Linux's `fs.protected_regular` and `fs.protected_fifos` draw the same
/// line, and retry draws it whatever they are set to. The error is why.
pub fn judge_existing(shared: bool, dir: &FileStat, file: &FileStat) -> Result<(), String> {
    let me = Uid::effective().as_raw();
    if !shared || file.st_uid == me || file.st_uid == dir.st_uid {
        return Ok(());
    }
    Err(format!(
        "is another user's {} (uid {}) in a directory others can write to: retry does not write into it",
        kind(file),
        file.st_uid
    ))
}

/// Whether retry may append to the regular file `file` (the log) in a
/// directory others can write to (`shared`): only with a single link. A
/// second name is a hard link, which another user could have made to a
/// file of the caller's elsewhere (where `fs.protected_hardlinks` is 0, or
/// was when it was made), so that the log's lines land in that file.
pub fn judge_links(shared: bool, file: &FileStat) -> Result<(), String> {
    if !shared || file.st_nlink <= 1 {
        return Ok(());
    }
    Err(format!(
        "has {} hard links in a directory others can write to: one may be a link another user made to a file of yours, so retry does not append to it",
        file.st_nlink
    ))
}

/// What kind of file `stat` is, in words.
pub fn kind(stat: &FileStat) -> &'static str {
    use nix::sys::stat::SFlag;
    match SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => "file",
        SFlag::S_IFIFO => "FIFO",
        SFlag::S_IFCHR | SFlag::S_IFBLK => "device",
        SFlag::S_IFSOCK => "socket",
        SFlag::S_IFDIR => "directory",
        SFlag::S_IFLNK => "symbolic link",
        _ => "file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(mode: u32, uid: u32, gid: u32) -> FileStat {
        // SAFETY: FileStat is a plain C struct; all-zero is a valid value.
        let mut s: FileStat = unsafe { std::mem::zeroed() };
        s.st_mode = mode;
        s.st_uid = uid;
        s.st_gid = gid;
        s
    }

    fn entry(tag: u16, perm: u16, id: u32) -> AclEntry {
        AclEntry { tag, perm, id }
    }

    fn encode(entries: &[AclEntry]) -> Vec<u8> {
        let mut v = ACL_VERSION.to_le_bytes().to_vec();
        for e in entries {
            v.extend(e.tag.to_le_bytes());
            v.extend(e.perm.to_le_bytes());
            v.extend(e.id.to_le_bytes());
        }
        v
    }

    const ME: u32 = 0;
    const MALLORY: u32 = 1001;
    /// `root:root 0755` plus `u:mallory:rwx`, as the kernel keeps it: the
    /// group bits show the mask (rwx), the owning group has r-x.
    fn with_named_user(mask: u16) -> Vec<AclEntry> {
        vec![
            entry(ACL_USER_OBJ, 7, u32::MAX),
            entry(ACL_USER, 7, MALLORY),
            entry(ACL_GROUP_OBJ, 5, u32::MAX),
            entry(ACL_MASK, mask, u32::MAX),
            entry(ACL_OTHER, 5, u32::MAX),
        ]
    }

    #[test]
    fn the_kernel_format_is_read_and_anything_else_refused() {
        let acl = with_named_user(7);
        assert_eq!(parse_acl(&encode(&acl)), Some(acl));
        assert_eq!(parse_acl(&[2, 0, 0]), None);
        assert_eq!(parse_acl(&[1, 0, 0, 0]), None);
        let mut odd = encode(&with_named_user(7));
        odd.pop();
        assert_eq!(parse_acl(&odd), None);
        assert_eq!(parse_acl(&encode(&[entry(0x40, 7, 0)])), None);
    }

    #[test]
    fn an_acl_granting_write_to_another_user_is_others_write() {
        let dir = stat(0o40775, ME, 0);
        // The mode alone would pass: the group bits are the mask, and the
        // group is the caller's own.
        assert_eq!(other_writers(&dir, None, ME, |_| true), None);
        assert_eq!(
            other_writers(&dir, Some(&with_named_user(7)), ME, |_| true).as_deref(),
            Some("user 1001 through an ACL")
        );
        // A mask without write takes the named user's write away.
        let masked = stat(0o40755, ME, 0);
        assert_eq!(
            other_writers(&masked, Some(&with_named_user(5)), ME, |_| true),
            None
        );
    }

    #[test]
    fn with_a_mask_the_owning_group_s_rights_come_from_its_entry() {
        // Group bits rwx (the mask), but the owning group itself has r-x
        // and the named group, not the caller's, has rwx.
        let dir = stat(0o40775, ME, 50);
        let acl = [
            entry(ACL_USER_OBJ, 7, u32::MAX),
            entry(ACL_GROUP_OBJ, 5, u32::MAX),
            entry(ACL_GROUP, 7, 60),
            entry(ACL_MASK, 7, u32::MAX),
            entry(ACL_OTHER, 5, u32::MAX),
        ];
        assert_eq!(
            other_writers(&dir, Some(&acl), ME, |_| false).as_deref(),
            Some("group 60 through an ACL")
        );
        assert_eq!(other_writers(&dir, Some(&acl), ME, |g| g == 60), None);
        // The owning group with write, through its entry.
        let acl = [
            entry(ACL_USER_OBJ, 7, u32::MAX),
            entry(ACL_GROUP_OBJ, 7, u32::MAX),
            entry(ACL_MASK, 7, u32::MAX),
            entry(ACL_OTHER, 5, u32::MAX),
        ];
        assert_eq!(
            other_writers(&dir, Some(&acl), ME, |_| false).as_deref(),
            Some("its group (gid 50)")
        );
    }

    #[test]
    fn a_named_entry_for_the_caller_or_the_owner_is_no_one_else() {
        let dir = stat(0o40775, 7, 7);
        let acl = [
            entry(ACL_USER_OBJ, 7, u32::MAX),
            entry(ACL_USER, 7, ME),
            entry(ACL_USER, 7, 7),
            entry(ACL_GROUP_OBJ, 5, u32::MAX),
            entry(ACL_MASK, 7, u32::MAX),
            entry(ACL_OTHER, 5, u32::MAX),
        ];
        assert_eq!(other_writers(&dir, Some(&acl), ME, |_| false), None);
    }

    #[test]
    fn the_mode_bits_decide_without_an_acl() {
        assert_eq!(
            other_writers(&stat(0o41777, 0, 0), None, ME, |_| true).as_deref(),
            Some("every user")
        );
        assert_eq!(
            other_writers(&stat(0o40775, 0, 100), None, ME, |_| false).as_deref(),
            Some("its group (gid 100)")
        );
        assert_eq!(
            other_writers(&stat(0o40775, 0, 100), None, ME, |_| true),
            None
        );
        assert_eq!(
            other_writers(&stat(0o40755, 0, 100), None, ME, |_| false),
            None
        );
    }

    /// A log file in `/tmp` with a second name (another user's hard link
    /// to a file of the caller's) was appended to.
    #[test]
    fn a_file_with_a_second_link_is_refused_only_where_others_write() {
        let mut f = stat(0o100644, 0, 0);
        f.st_nlink = 2;
        let why = judge_links(true, &f).expect_err("refused");
        assert!(why.starts_with("has 2 hard links"), "{why}");
        assert_eq!(judge_links(false, &f), Ok(()));
        f.st_nlink = 1;
        assert_eq!(judge_links(true, &f), Ok(()));
    }
}
