//go:build darwin && cgo

// Delta's notifications on macOS, from its bundle, through
// UNUserNotificationCenter. Modelled on kolide/launcher's
// ee/desktop/user/notify/notify_darwin.m (itself drawn from fyne's
// app/app_darwin.m): one category with actions, the request id in
// userInfo, and a delegate that hands a clicked action back to Go.

#import <Foundation/Foundation.h>
#import <UserNotifications/UserNotifications.h>

#include "_cgo_export.h"

@interface DeltaNoteDelegate : NSObject <UNUserNotificationCenterDelegate>
@end

@implementation DeltaNoteDelegate
- (void)userNotificationCenter:(UNUserNotificationCenter *)center
    didReceiveNotificationResponse:(UNNotificationResponse *)response
             withCompletionHandler:(void (^)(void))completionHandler {
	NSString *rid = response.notification.request.content.userInfo[@"request_id"];
	NSString *action = response.actionIdentifier;
	if ([action isEqualToString:UNNotificationDefaultActionIdentifier]) {
		action = @"default";
	}
	if (![action isEqualToString:UNNotificationDismissActionIdentifier]) {
		deltaNoteAction((char *)[action UTF8String], (char *)[(rid ?: @"") UTF8String]);
	}
	completionHandler();
}

// Shown even while Delta is the frontmost app.
- (void)userNotificationCenter:(UNUserNotificationCenter *)center
       willPresentNotification:(UNNotification *)notification
         withCompletionHandler:(void (^)(UNNotificationPresentationOptions))completionHandler {
	completionHandler(UNNotificationPresentationOptionBanner | UNNotificationPresentationOptionList);
}
@end

static DeltaNoteDelegate *deltaNoteDelegate;

// deltaNotifySetup asks once for authorization (macOS asks the person the
// first time only), registers the categories (a call's: open, ask; a
// request to pair's: accept) and sets the delegate.
void deltaNotifySetup(const char *openTitle, const char *askTitle, const char *acceptTitle) {
	@autoreleasepool {
		UNUserNotificationCenter *center = [UNUserNotificationCenter currentNotificationCenter];
		UNNotificationAction *open = [UNNotificationAction actionWithIdentifier:@"open"
			title:[NSString stringWithUTF8String:openTitle] options:UNNotificationActionOptionForeground];
		UNNotificationAction *ask = [UNNotificationAction actionWithIdentifier:@"ask"
			title:[NSString stringWithUTF8String:askTitle] options:UNNotificationActionOptionNone];
		UNNotificationCategory *category = [UNNotificationCategory categoryWithIdentifier:@"DeltaCall"
			actions:@[open, ask] intentIdentifiers:@[] options:UNNotificationCategoryOptionNone];
		UNNotificationAction *accept = [UNNotificationAction actionWithIdentifier:@"accept"
			title:[NSString stringWithUTF8String:acceptTitle] options:UNNotificationActionOptionNone];
		UNNotificationCategory *pair = [UNNotificationCategory categoryWithIdentifier:@"DeltaPair"
			actions:@[accept] intentIdentifiers:@[] options:UNNotificationCategoryOptionNone];
		[center setNotificationCategories:[NSSet setWithObjects:category, pair, nil]];
		deltaNoteDelegate = [[DeltaNoteDelegate alloc] init];
		[center setDelegate:deltaNoteDelegate];
		[center requestAuthorizationWithOptions:(UNAuthorizationOptionAlert | UNAuthorizationOptionSound)
			completionHandler:^(BOOL granted, NSError *_Nullable error) {
				// To delta.log through Go (the agent has no stderr file).
				NSString *why = error != nil ? [error localizedDescription] : @"";
				deltaNoteAuthorized(granted ? 1 : 0, (char *)[why UTF8String]);
			}];
	}
}

// deltaNotify posts one notification and waits up to 10 s for the center
// to take it; it returns 0, or 1 with the error's text in errBuf.
int deltaNotify(const char *title, const char *body, const char *requestID, char *errBuf, int errLen) {
	@autoreleasepool {
		UNUserNotificationCenter *center = [UNUserNotificationCenter currentNotificationCenter];
		UNMutableNotificationContent *content = [[UNMutableNotificationContent alloc] init];
		content.title = [NSString stringWithUTF8String:title];
		content.body = [NSString stringWithUTF8String:body];
		NSString *rid = [NSString stringWithUTF8String:requestID];
		if (rid.length > 0) {
			// "pair:ID" is a request to pair (Accept); any other a call.
			content.categoryIdentifier = [rid hasPrefix:@"pair:"] ? @"DeltaPair" : @"DeltaCall";
			content.userInfo = @{@"request_id" : rid};
		}
		NSString *identifier = [NSString stringWithFormat:@"delta-%@", [[NSUUID UUID] UUIDString]];
		UNNotificationRequest *request = [UNNotificationRequest requestWithIdentifier:identifier content:content trigger:nil];
		// Written only by the completion handler, and read only after it
		// signalled: a handler that comes after the 10 s timeout writes it
		// with nobody reading (review A7: the timeout path wrote it too).
		__block NSString *failure = nil;
		dispatch_semaphore_t done = dispatch_semaphore_create(0);
		[center addNotificationRequest:request withCompletionHandler:^(NSError *_Nullable error) {
			if (error != nil) {
				failure = [[error localizedDescription] copy];
			}
			dispatch_semaphore_signal(done);
		}];
		if (dispatch_semaphore_wait(done, dispatch_time(DISPATCH_TIME_NOW, 10 * NSEC_PER_SEC)) != 0) {
			[center removePendingNotificationRequestsWithIdentifiers:@[ identifier ]];
			strlcpy(errBuf, "the notification center did not take the notification within 10 s", errLen);
			return 1;
		}
		if (failure != nil) {
			strlcpy(errBuf, [failure UTF8String], errLen);
			return 1;
		}
		return 0;
	}
}

// deltaBundleID returns the main bundle's identifier into buf ("" when
// Delta runs outside a bundle, where UNUserNotificationCenter raises). As
// fyne's app_darwin.m decides it.
void deltaBundleID(char *buf, int len) {
	@autoreleasepool {
		NSString *bid = [[NSBundle mainBundle] bundleIdentifier];
		strlcpy(buf, bid != nil ? [bid UTF8String] : "", len);
	}
}
