//! A server whose create reply names a node the lock did not ask for (even
//! another node under the lock path): the acquire fails with the server's
//! fault, and the node the create may have made is looked up by its
//! protection prefix and deleted, not leaked.

mod transcript;

use zoolock_core::wire::{OpCode, Response, Stat};
use zoolock_core::{
    Recipe, RecipeEvent, RequestError, ZkPath,
    recipes::{LockConfig, Mutex, OpPlan},
};

use transcript::{Answer, Harness, at, kids};

const BASE: &str = "/lies";

#[test]
fn a_create_reply_outside_the_lock_path_fails_and_cleans_up() {
    for lie in ["/elsewhere/_c_x-lock-0000000001", "/lies/_c_someone-else-lock-0000000001", "/lies", "not a path"] {
        let config = LockConfig::new(3).with_plan(OpPlan::Curator);
        let mut h = Harness::new(Mutex::new(ZkPath::new(BASE).unwrap(), config));
        h.run(|m| m.acquire(at(0), None)).unwrap();
        assert_eq!(h.sent(), ["create2 /lies/_c_<uuid>-lock- [ES]"]);
        let create = h.pending.pop_front().unwrap();
        let prefix = transcript::name(&transcript::path_of(&create));
        let reply = Response::Create2 { path: String::from(lie), stat: Stat { czxid: 5, ..Stat::default() } };
        h.run(|m| m.handle_reply(at(1), create.id, Ok(reply)));
        let unexpected = RequestError::UnexpectedResponse { op: OpCode::CREATE2 };
        assert_eq!(h.events(), vec![RecipeEvent::Failed(unexpected)], "{lie:?}");

        // Our real node did land: found by its prefix and deleted.
        let ours = format!("{prefix}0000000004");
        h.answer(at(2), "getChildren /lies", kids(&["_c_other-lock-0000000003", &ours]));
        h.answer(at(3), "delete /lies/_c_<uuid>-lock-0000000004", Answer::Empty);
        h.assert_idle();
        assert!(h.recipe.is_quiescent(), "{lie:?}");
    }
}
