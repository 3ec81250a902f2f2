//! Generic key commands.

use super::table::{acl, flags, Command};
use super::{CmdResult, Ctx};

const KS: u32 = acl::KEYSPACE;

pub const COMMANDS: &[Command] = &[
    Command::new("del", -2, del)
        .flags(flags::WRITE)
        .acl(KS | acl::WRITE | acl::SLOW)
        .keys(1, -1, 1)
        .doc(
            "generic",
            "1.0.0",
            "O(N) where N is the number of keys that will be removed.",
            "Deletes one or more keys.",
        ),
    Command::new("unlink", -2, del)
        .flags(flags::WRITE | flags::FAST)
        .acl(KS | acl::WRITE | acl::FAST)
        .keys(1, -1, 1)
        .doc(
            "generic",
            "4.0.0",
            "O(1) for each key removed regardless of its size.",
            "Asynchronously deletes one or more keys.",
        ),
    Command::new("exists", -2, exists)
        .flags(flags::READONLY | flags::FAST)
        .acl(KS | acl::READ | acl::FAST)
        .keys(1, -1, 1)
        .doc(
            "generic",
            "1.0.0",
            "O(N) where N is the number of keys to check.",
            "Determines whether one or more keys exist.",
        ),
    Command::new("type", 2, type_)
        .flags(flags::READONLY | flags::FAST)
        .acl(KS | acl::READ | acl::FAST)
        .keys(1, 1, 1)
        .doc(
            "generic",
            "1.0.0",
            "O(1)",
            "Determines the type of value stored at a key.",
        ),
]
.as_slice();

fn del(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let removed = args[1..]
        .iter()
        .filter(|k| ctx.keys.remove(k).is_some())
        .count();
    ctx.out.int(removed as i64);
    Ok(())
}

fn exists(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let n = args[1..].iter().filter(|k| ctx.keys.exists(k)).count();
    ctx.out.int(n as i64);
    Ok(())
}

fn type_(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let name = ctx
        .keys
        .get(args[1])
        .map_or("none", |e| e.value.type_name());
    ctx.out.simple(name);
    Ok(())
}
