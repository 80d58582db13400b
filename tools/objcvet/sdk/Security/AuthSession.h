// Security/AuthSession.h: the caller's session and its attributes.
#pragma once
#include <stdint.h>
typedef int32_t OSStatus;
typedef uint32_t SecuritySessionId;
typedef uint32_t SessionAttributeBits;
enum { noSecuritySession = 0, callerSecuritySession = ((SecuritySessionId)-1) };
enum {
	sessionIsRoot = 0x0001,
	sessionHasGraphicAccess = 0x0010,
	sessionHasTTY = 0x0020,
	sessionIsRemote = 0x1000,
};
enum { errSessionSuccess = 0 };
extern OSStatus SessionGetInfo(SecuritySessionId session, SecuritySessionId *sessionId, SessionAttributeBits *attributes);
