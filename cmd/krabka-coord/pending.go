package main

// roles, watch and leave run on Client.Roles, Client.Watch and Client.Leave
// of core/coord (issues 11 and 12).

var rolesCommand = &command{
	name: "roles", summary: "every role in the coordination topic with holder, token, lease",
	help:    `Reads every partition of the coordination topic once and lists every role found.`,
	example: `krabka-coord -b kafka-1:9092 roles`,
	run: func(e *env, args []string) int {
		e.errorf("roles needs Client.Roles of core/coord, which this build does not have yet")
		return exitFailed
	},
}

var watchCommand = &command{
	name: "watch", args: "ROLE...", summary: "follow roles live: holder changes, roster changes",
	help:    `Prints the events of the roles until interrupted.`,
	example: `krabka-coord -b kafka-1:9092 watch controller`,
	run: func(e *env, args []string) int {
		if len(args) == 0 {
			e.errorf("watch needs at least one ROLE")
			return exitUsage
		}
		e.errorf("watch needs Client.Watch of core/coord, which this build does not have yet")
		return exitFailed
	},
}

var leaveCommand = &command{
	name: "leave", args: "ROLE MEMBER", summary: "remove a member's registration (admin)",
	help:    `Writes a tombstone of MEMBER's registration of ROLE.`,
	example: `krabka-coord -b kafka-1:9092 leave controller node-7`,
	run: func(e *env, args []string) int {
		if len(args) != 2 {
			e.errorf("leave needs ROLE MEMBER")
			return exitUsage
		}
		e.errorf("leave needs Client.Leave of core/coord, which this build does not have yet")
		return exitFailed
	},
}
