// UserNotifications: UNUserNotificationCenter and what Delta posts with it.
#pragma once
#import <Foundation/Foundation.h>

typedef NSString *UNNotificationCategoryIdentifier;

typedef NS_OPTIONS(NSUInteger, UNAuthorizationOptions) {
	UNAuthorizationOptionBadge = (1 << 0),
	UNAuthorizationOptionSound = (1 << 1),
	UNAuthorizationOptionAlert = (1 << 2),
};

typedef NS_OPTIONS(NSUInteger, UNNotificationActionOptions) {
	UNNotificationActionOptionAuthenticationRequired = (1 << 0),
	UNNotificationActionOptionDestructive = (1 << 1),
	UNNotificationActionOptionForeground = (1 << 2),
};
static const UNNotificationActionOptions UNNotificationActionOptionNone = 0;

typedef NS_OPTIONS(NSUInteger, UNNotificationCategoryOptions) {
	UNNotificationCategoryOptionCustomDismissAction = (1 << 0),
};
static const UNNotificationCategoryOptions UNNotificationCategoryOptionNone = 0;

typedef NS_OPTIONS(NSUInteger, UNNotificationPresentationOptions) {
	UNNotificationPresentationOptionBadge = (1 << 0),
	UNNotificationPresentationOptionSound = (1 << 1),
	UNNotificationPresentationOptionList = (1 << 3),
	UNNotificationPresentationOptionBanner = (1 << 4),
};

extern NSString *const UNNotificationDefaultActionIdentifier;
extern NSString *const UNNotificationDismissActionIdentifier;

@interface UNNotificationAction : NSObject
+ (instancetype)actionWithIdentifier:(NSString *)identifier title:(NSString *)title options:(UNNotificationActionOptions)options;
@end

@interface UNNotificationCategory : NSObject
+ (instancetype)categoryWithIdentifier:(NSString *)identifier
                               actions:(NSArray<UNNotificationAction *> *)actions
                     intentIdentifiers:(NSArray<NSString *> *)intentIdentifiers
                               options:(UNNotificationCategoryOptions)options;
@end

@interface UNNotificationContent : NSObject
@property (readonly, copy) NSString *title;
@property (readonly, copy) NSString *body;
@property (readonly, copy) NSString *categoryIdentifier;
@property (readonly, copy) NSDictionary *userInfo;
@end

@interface UNMutableNotificationContent : UNNotificationContent
@property (copy) NSString *title;
@property (copy) NSString *body;
@property (copy) NSString *categoryIdentifier;
@property (copy) NSDictionary *userInfo;
@end

@interface UNNotificationTrigger : NSObject
@end

@interface UNNotificationRequest : NSObject
+ (instancetype)requestWithIdentifier:(NSString *)identifier content:(UNNotificationContent *)content trigger:(UNNotificationTrigger *)trigger;
@property (readonly, copy) NSString *identifier;
@property (readonly, copy) UNNotificationContent *content;
@end

@interface UNNotification : NSObject
@property (readonly, copy) UNNotificationRequest *request;
@end

@interface UNNotificationResponse : NSObject
@property (readonly, copy) UNNotification *notification;
@property (readonly, copy) NSString *actionIdentifier;
@end

@class UNUserNotificationCenter;

@protocol UNUserNotificationCenterDelegate <NSObject>
@optional
- (void)userNotificationCenter:(UNUserNotificationCenter *)center
       willPresentNotification:(UNNotification *)notification
         withCompletionHandler:(void (^)(UNNotificationPresentationOptions options))completionHandler;
- (void)userNotificationCenter:(UNUserNotificationCenter *)center
    didReceiveNotificationResponse:(UNNotificationResponse *)response
             withCompletionHandler:(void (^)(void))completionHandler;
@end

@interface UNUserNotificationCenter : NSObject
@property (weak) id<UNUserNotificationCenterDelegate> delegate;
+ (UNUserNotificationCenter *)currentNotificationCenter;
- (void)requestAuthorizationWithOptions:(UNAuthorizationOptions)options completionHandler:(void (^)(BOOL granted, NSError *_Nullable error))completionHandler;
- (void)setNotificationCategories:(NSSet<UNNotificationCategory *> *)categories;
- (void)addNotificationRequest:(UNNotificationRequest *)request withCompletionHandler:(void (^_Nullable)(NSError *_Nullable error))completionHandler;
- (void)removePendingNotificationRequestsWithIdentifiers:(NSArray<NSString *> *)identifiers;
@end
